"""The C source of the compiled loops (`kernels.native.clib` builds it): fixed text, no user input ever enters it.

* ``product_<dtype>_<rows>``: the sparse bilinear product z[r, k] = sum_t c_t x[r, i_t] y[r, j_t] of the
  ``compiled`` strategy, the terms grouped by output and then by x index, for blocks of `BLOCK` or `WIDE_BLOCK`
  rows.
* ``scan_<dtype>`` and ``scan_backward_<dtype>``: the Seq2Tens scan of `kernels.scans.seq2tens` (the product over time of
  the lifts of the steps in the truncated tensor algebra) and its gradient, for `LANES` paths at a time.

Both are written with GCC/clang vector extensions (`VECTOR_BYTES`), so each operation is a vector operation across
rows or paths, whatever the algebra's dimensions.  Their working buffers must start on a multiple of `ALIGNMENT`
bytes (`kernels.native.clib` allocates them so): a vector that straddles two cache lines is loaded twice.  Each runs its
blocks on a number of threads it is given: a pool of threads the library starts, which never waits for a thread
that starts late, or an OpenMP team (the pool torch's operations use) for calls from torch.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

_TYPES = ((np.dtype(np.float64), "double"), (np.dtype(np.float32), "float"))

#: Bytes per vector, by loop: 64 (one 512-bit register where the CPU has them, else two or four narrower ones) for
#: the product, where they took 0.6-0.7x the time of 32-byte vectors (Clebsch-Gordan lmax 4 and 6, both dtypes, one
#: thread, aligned buffers, on this project's AVX-512 machine); 32 for the scan, which took 1.7x its time with 64.
VECTOR_BYTES: Mapping[str, int] = MappingProxyType({"product": 64, "scan": 32})
#: Bytes the working buffers' starts are a multiple of: a cache line, so that no vector straddles two.
ALIGNMENT = 64

#: Rows per block of the product loop, by dtype: the components of one block sit in cache while every term is
#: added; 32 float64 or 64 float32 rows fill four vectors per accumulated output.
BLOCK: Mapping[np.dtype[Any], int] = MappingProxyType({np.dtype(np.float64): 32, np.dtype(np.float32): 64})
#: Rows per wide block: twice `BLOCK`, eight vectors per output, so each term's index and coefficient serve twice the
#: multiply-adds.  For algebras whose block of x and y components stays in the L1 cache (`kernels.native.clib.block_rows`):
#: one thread took 0.83x the time for CG(4) float32, 0.9x for CG(6) and translation(40), and 1.3-1.5x for
#: translation(56) and translation(64), whose every output reads all of y.
WIDE_BLOCK: Mapping[np.dtype[Any], int] = MappingProxyType({dtype: 2 * rows for dtype, rows in BLOCK.items()})

#: Paths per block of the scan, by dtype: each word of a state is 64 bytes, one number per path.
LANES: Mapping[np.dtype[Any], int] = MappingProxyType({np.dtype(np.float64): 8, np.dtype(np.float32): 16})

_PRODUCT = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Threads: a pool of worker threads, started on first use, that join the caller in running one job at a time.
   A job is `chunks` calls run(args, chunk, member), claimed one by one under the pool's lock; member numbers the
   participant (0 for the caller, below `threads`), so that each has its own part of the working memory.  The caller
   claims chunks too, and waits only for chunks a worker has claimed: a worker that starts late, because another
   runtime's threads spin on the other cores (OpenBLAS's keep spinning long after a matrix product), finds nothing
   left and the caller has done the work, instead of waiting for it (an OpenMP team waited milliseconds there).
   A second caller while a job runs, or threads < 2, runs its chunks alone.  A worker that finishes waits for the
   next job by yielding its core for up to SPIN_NANOSECONDS before it sleeps: waking a sleeping thread took longer
   than a CG(4) product of 1,000 rows.
   With openmp (and a library built with OpenMP), the job runs on an OpenMP team instead: the pool torch's own
   operations use, whose threads are then awake, where this pool's workers would share their cores with them. */
#define SPIN_NANOSECONDS 200000
typedef void (*chunk_run)(const void *args, int64_t chunk, int64_t member);
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER, caller_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static int64_t workers, sleepers, generation, job_chunks, job_next, job_done, job_members, job_threads;
static chunk_run job_run;
static const void *job_args;

/* Claim and run the job's chunks until none is left (called and returning with pool_lock held). */
static void claim_chunks(int64_t member) {
    while (job_next < job_chunks) {
        const int64_t chunk = job_next++;
        const chunk_run run = job_run;
        const void *args = job_args;
        pthread_mutex_unlock(&pool_lock);
        run(args, chunk, member);
        pthread_mutex_lock(&pool_lock);
        if (++job_done == job_chunks) pthread_cond_signal(&pool_done);
    }
}

static int64_t nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void *worker(void *unused) {
    int64_t seen = 0;
    (void)unused;
    for (;;) {
        const int64_t until = nanoseconds() + SPIN_NANOSECONDS;
        while (__atomic_load_n(&generation, __ATOMIC_ACQUIRE) == seen && nanoseconds() < until) sched_yield();
        pthread_mutex_lock(&pool_lock);
        for (sleepers++; generation == seen; ) pthread_cond_wait(&pool_wake, &pool_lock);
        sleepers--;
        seen = generation;
        if (job_next < job_chunks && job_members < job_threads) claim_chunks(job_members++);
        pthread_mutex_unlock(&pool_lock);
    }
    return NULL;
}

static void parallel(chunk_run run, const void *args, int64_t chunks, int64_t threads, int64_t openmp) {
#ifdef _OPENMP
    if (openmp && threads > 1 && chunks > 1) {      /* no more than the caller's OpenMP threads (torch's setting) */
        const int team = threads < omp_get_max_threads() ? (int)threads : omp_get_max_threads();
        #pragma omp parallel for schedule(dynamic, 1) num_threads(team)
        for (int64_t chunk = 0; chunk < chunks; chunk++) run(args, chunk, omp_get_thread_num());
        return;
    }
#else
    (void)openmp;
#endif
    if (threads < 2 || chunks < 2 || pthread_mutex_trylock(&caller_lock) != 0) {
        for (int64_t chunk = 0; chunk < chunks; chunk++) run(args, chunk, 0);
        return;
    }
    pthread_mutex_lock(&pool_lock);
    for (pthread_t thread; workers < threads - 1 && pthread_create(&thread, NULL, worker, NULL) == 0; workers++)
        pthread_detach(thread);
    job_run = run, job_args = args, job_chunks = chunks, job_next = job_done = 0, job_members = 1;
    job_threads = threads;
    __atomic_store_n(&generation, generation + 1, __ATOMIC_RELEASE);
    if (sleepers) pthread_cond_broadcast(&pool_wake);
    claim_chunks(0);
    while (job_done < job_chunks) pthread_cond_wait(&pool_done, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
    pthread_mutex_unlock(&caller_lock);
}

/* Chunks of whole blocks for `threads` threads: about four each, for balance, and no more than the blocks. */
static int64_t chunk_blocks(int64_t items, int64_t block, int64_t threads, int64_t *chunks) {
    const int64_t blocks = (items + block - 1) / block, wanted = threads < 2 ? 1 : 4 * threads;
    const int64_t each = blocks < wanted ? 1 : (blocks + wanted - 1) / wanted;
    *chunks = (blocks + each - 1) / each;
    return each * block;
}

/* Vectors (GCC and clang extensions) of PRODUCT_BYTES bytes for the product (vec_) and SCAN_BYTES for the scan
   (scan_), loaded from any address a number may have and read through pointers to the numbers (may_alias). */
typedef double vec_double __attribute__((vector_size(PRODUCT_BYTES), aligned(sizeof(double)), may_alias));
typedef float vec_float __attribute__((vector_size(PRODUCT_BYTES), aligned(sizeof(float)), may_alias));
typedef double scan_double __attribute__((vector_size(SCAN_BYTES), aligned(sizeof(double)), may_alias));
typedef float scan_float __attribute__((vector_size(SCAN_BYTES), aligned(sizeof(float)), may_alias));

/* dst[c * ds + r] = src[r * ss + c] for r < rows, c < cols: tiles of 8 x 8 numbers through vector shuffles where
   the compiler has them (GCC 12 or later, clang), the rest one number at a time.  It moves each block of rows into
   and out of the product's working buffer, where one number at a time took a third of the time of a CG(4) product
   (float32). */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#endif
#endif
#define TRANSPOSE(T)                                                                                                   \
typedef T tile_##T __attribute__((vector_size(8 * sizeof(T)), aligned(sizeof(T)), may_alias));                         \
static void transpose_##T(T *dst, int64_t ds, const T *src, int64_t ss, int64_t rows, int64_t cols) {                  \
    int64_t r0 = 0;                                                                                                    \
    TILES(T)                                                                                                           \
    for (int64_t r = r0; r < rows; r++)                                                                                \
        for (int64_t c = 0; c < cols; c++) dst[c * ds + r] = src[r * ss + c];                                          \
}
#ifdef SHUFFLE
/* Rows r0 .. r0 + 7 in tiles: b pairs rows (even, odd columns), e pairs those (columns j and j + 4), and the last
   shuffle joins rows 0-3 and 4-7 of one column. */
#define TILES(T)                                                                                                       \
    for (; r0 + 8 <= rows; r0 += 8) {                                                                                  \
        int64_t c0 = 0;                                                                                                \
        for (; c0 + 8 <= cols; c0 += 8) {                                                                              \
            tile_##T a[8], b[8], e[8];                                                                                 \
            for (int i = 0; i < 8; i++) a[i] = *(const tile_##T *)(src + (r0 + i) * ss + c0);                          \
            for (int i = 0; i < 8; i += 2) {                                                                           \
                b[i] = SHUFFLE(a[i], a[i + 1], 0, 8, 2, 10, 4, 12, 6, 14);                                             \
                b[i + 1] = SHUFFLE(a[i], a[i + 1], 1, 9, 3, 11, 5, 13, 7, 15);                                         \
            }                                                                                                          \
            for (int i = 0; i < 8; i += 4)                                                                             \
                for (int j = 0; j < 2; j++) {                                                                          \
                    e[i + j] = SHUFFLE(b[i + j], b[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);                              \
                    e[i + j + 2] = SHUFFLE(b[i + j], b[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);                        \
                }                                                                                                      \
            for (int j = 0; j < 4; j++) {                                                                              \
                T *column = dst + (c0 + j) * ds + r0;                                                                  \
                *(tile_##T *)column = SHUFFLE(e[j], e[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);                               \
                *(tile_##T *)(column + 4 * ds) = SHUFFLE(e[j], e[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);                  \
            }                                                                                                          \
        }                                                                                                              \
        for (int64_t r = r0; r < r0 + 8; r++)                                                                          \
            for (int64_t c = c0; c < cols; c++) dst[c * ds + r] = src[r * ss + c];                                     \
    }
#else
#define TILES(T)
#endif

/* z[r, k] = sum over the terms t of z_k of cc[t] * x[r, i_t] * y[r, j_t], for rows r < rows, the terms in groups
   that share their x index: groups g in starts[k] .. starts[k + 1], group g with x index i_g and terms
   gt[g] .. gt[g + 1], so z_k = sum_g x_i_g (sum_t cc[t] y_j_t): one load of x per group.  The indices come scaled
   by B, as offsets into the working buffer: gi[g] = i_g B and jj[t] = j_t B (one instruction less per term).
   x and y are read through element strides (row, component), so any layout and broadcast rows (stride 0) serve;
   z is written row by row, d3 numbers each.  work holds (d1 + d2 + d3) * B numbers: the components of one block of
   B rows, transposed (by tiles where a row's components are adjacent; a last, partial block's empty lanes
   zeroed, so that no garbage, such as a subnormal number, slows its arithmetic), so that each term is B / W vector
   multiply-adds (W numbers per vector), and each group B / W more, into accumulators held in registers; and the
   block's outputs, transposed back into z at the end of the block. */
#define PRODUCT(NAME, T, B)                                                                                            \
static void NAME##_rows(int64_t rows, int64_t d1, int64_t d2, int64_t d3,                                              \
          const T *x, int64_t xr, int64_t xa, const T *y, int64_t yr, int64_t ya, T *z,                                \
          const int64_t *starts, const int64_t *gi, const int64_t *gt, const int64_t *jj, const T *cc, T *work) {      \
    enum { V = B * sizeof(T) / sizeof(vec_##T) };                                                                      \
    T *xt = work, *yt = work + d1 * B, *zt = yt + d2 * B;                                                              \
    for (int64_t r0 = 0; r0 < rows; r0 += B) {                                                                         \
        int64_t n = rows - r0 < B ? rows - r0 : B;                                                                     \
        if (xa == 1) transpose_##T(xt, B, x + r0 * xr, xr, n, d1);                                                     \
        else for (int64_t a = 0; a < d1; a++)                                                                          \
            for (int64_t r = 0; r < n; r++) xt[a * B + r] = x[(r0 + r) * xr + a * xa];                                 \
        if (ya == 1) transpose_##T(yt, B, y + r0 * yr, yr, n, d2);                                                     \
        else for (int64_t b = 0; b < d2; b++)                                                                          \
            for (int64_t r = 0; r < n; r++) yt[b * B + r] = y[(r0 + r) * yr + b * ya];                                 \
        for (int64_t a = 0; n < B && a < d1 + d2; a++) memset(xt + a * B + n, 0, (B - n) * sizeof(T));                 \
        for (int64_t k = 0; k < d3; k++) {                                                                             \
            vec_##T acc[V];                                                                                            \
            for (int v = 0; v < V; v++) acc[v] = (vec_##T){0};                                                         \
            for (int64_t g = starts[k]; g < starts[k + 1]; g++) {                                                      \
                vec_##T inner[V];                                                                                      \
                for (int v = 0; v < V; v++) inner[v] = (vec_##T){0};                                                   \
                for (int64_t t = gt[g]; t < gt[g + 1]; t++) {                                                          \
                    const vec_##T *q = (const vec_##T *)(yt + jj[t]);                                                  \
                    const T c = cc[t];                                                                                 \
                    for (int v = 0; v < V; v++) inner[v] += c * q[v];                                                  \
                }                                                                                                      \
                const vec_##T *p = (const vec_##T *)(xt + gi[g]);                                                      \
                for (int v = 0; v < V; v++) acc[v] += p[v] * inner[v];                                                 \
            }                                                                                                          \
            memcpy(zt + k * B, acc, sizeof acc);                                                                       \
        }                                                                                                              \
        transpose_##T(z + r0 * d3, d3, zt, B, d3, n);                                                                  \
    }                                                                                                                  \
}                                                                                                                      \
/* The same on `threads` threads, work holding (d1 + d2 + d3) B numbers for each, or NULL: then allocated here (one \
   allocation, freed on return; nothing to zero, as above).  Returns 0, or 1 when that allocation fails. */           \
typedef struct {                                                                                                       \
    int64_t rows, d1, d2, d3, xr, xa, yr, ya, each;                                                                    \
    const T *x, *y, *cc;                                                                                               \
    T *z, *work;                                                                                                       \
    const int64_t *starts, *gi, *gt, *jj;                                                                              \
} NAME##_job;                                                                                                          \
static void NAME##_chunk(const void *args, int64_t chunk, int64_t member) {                                            \
    const NAME##_job *j = args;                                                                                        \
    const int64_t first = chunk * j->each, stop = first + j->each < j->rows ? first + j->each : j->rows;               \
    NAME##_rows(stop - first, j->d1, j->d2, j->d3, j->x + first * j->xr, j->xr, j->xa, j->y + first * j->yr, j->yr,    \
                j->ya, j->z + first * j->d3, j->starts, j->gi, j->gt, j->jj, j->cc,                                    \
                j->work + member * (j->d1 + j->d2 + j->d3) * B);                                                       \
}                                                                                                                      \
int NAME(int64_t threads, int64_t openmp, int64_t rows, int64_t d1, int64_t d2, int64_t d3,                            \
         const T *x, int64_t xr, int64_t xa, const T *y, int64_t yr, int64_t ya, T *z,                                 \
         const int64_t *starts, const int64_t *gi, const int64_t *gt, const int64_t *jj, const T *cc, T *work) {       \
    int64_t chunks;                                                                                                    \
    const int64_t each = chunk_blocks(rows, B, threads, &chunks);                                                      \
    const size_t bytes = (size_t)(threads * (d1 + d2 + d3) * B) * sizeof(T) / ALIGNMENT * ALIGNMENT + ALIGNMENT;       \
    T *own = work ? NULL : aligned_alloc(ALIGNMENT, bytes);                                                            \
    if (!work && !own) return 1;                                                                                       \
    const NAME##_job job = {rows, d1, d2, d3, xr, xa, yr, ya, each, x, y, cc, z, work ? work : own, starts, gi, gt,    \
                            jj};                                                                                       \
    parallel(NAME##_chunk, &job, chunks, threads, openmp);                                                             \
    free(own);                                                                                                         \
    return 0;                                                                                                          \
}

"""

_SCAN = r"""
/* The Seq2Tens scan (kernels/seq2tens.py): the product over time of the lifts sum_{k<=p} z_t^k / k! of the steps
   z_t in the tensor algebra truncated at degree M, for LANES paths at a time.  A state holds levels 1..M; level m
   has d^m words (row-major) from word start[m], start[M + 1] words in all (start[0] = -1: level 0 is one word).
   Each word is LANES numbers, one per path, so every operation below is a vector operation across paths.
   zk + k d LANES holds the step z / k (k = 1..p) and `one` is level 0 (all ones). */

/* out[i d + a] = u[i] z[a] + add[i d + a] for i < n, a < d (out may be add): one step of Horner's rule. */
static void outer_add_SFX(REAL *out, const REAL *u, int64_t n, const REAL *z, const REAL *add, int64_t d) {
    enum { V = LANES * sizeof(REAL) / sizeof(VEC) };
    for (int64_t i = 0; i < n; i++) {
        VEC p[V];
        memcpy(p, u + i * LANES, sizeof p);
        for (int64_t a = 0; a < d; a++) {
            const VEC *q = (const VEC *)(z + a * LANES), *s = (const VEC *)(add + (i * d + a) * LANES);
            VEC *o = (VEC *)(out + (i * d + a) * LANES);
            for (int v = 0; v < V; v++) o[v] = p[v] * q[v] + s[v];
        }
    }
}

/* Horner's rule for level m, q = min(m, p): u_q = S_{m-q}, u_{k-1} = u_k z / k + S_{m-k+1} for k = q..2 (u_k, of
   level m - k, kept at U + start[m - k] for the backward pass), and with last = 1 the update S_m += u_1 z. */
static void horner_SFX(int64_t m, int64_t p, int64_t d, const int64_t *start, REAL *S, REAL *U, const REAL *zk,
                       const REAL *one, int last) {
    const int64_t q = m < p ? m : p;
    int64_t n = start[m - q + 1] - start[m - q];
    const REAL *u = m == q ? one : S + start[m - q] * LANES;
    for (int64_t k = q; k >= 2 - last; k--) {
        REAL *out = (k == 1 ? S : U) + start[m - k + 1] * LANES;
        outer_add_SFX(out, u, n, zk + k * d * LANES, S + start[m - k + 1] * LANES, d);
        u = out;
        n *= d;
    }
}

/* S <- S lift(z): levels from the top down, each reading only the levels below it. */
static void step_SFX(int64_t M, int64_t p, int64_t d, const int64_t *start, REAL *S, REAL *U, const REAL *zk,
                     const REAL *one) {
    for (int64_t m = M; m >= 1; m--) horner_SFX(m, p, d, start, S, U, zk, one, 1);
}

/* zk <- z / k for k = 1..p, z read from x (paths r < n at x + r xr, coordinates a at stride xa); lanes >= n get 0. */
static void load_step_SFX(REAL *zk, int64_t p, int64_t d, const REAL *x, int64_t xr, int64_t xa, int64_t n) {
    for (int64_t a = 0; a < d; a++)
        for (int64_t r = 0; r < LANES; r++) zk[(d + a) * LANES + r] = r < n ? x[r * xr + a * xa] : 0;
    for (int64_t k = 2; k <= p; k++)
        for (int64_t w = 0; w < d * LANES; w++) zk[k * d * LANES + w] = zk[d * LANES + w] / (REAL)k;
}

/* store: lanes r < n of the D words at S to out + r stride (out of the lanes).  load: the D numbers at
   g + r stride into lane r < n of S (lanes >= n get 0), replacing S's words or, with add = 1, added to them. */
static void store_SFX(REAL *out, int64_t stride, const REAL *S, int64_t D, int64_t n) {
    for (int64_t r = 0; r < n; r++)
        for (int64_t w = 0; w < D; w++) out[r * stride + w] = S[w * LANES + r];
}
static void load_SFX(REAL *S, const REAL *g, int64_t stride, int64_t D, int64_t n, int add) {
    for (int64_t w = 0; w < D; w++)
        for (int64_t r = 0; r < LANES; r++) {
            REAL value = r < n ? g[r * stride + w] : 0;
            S[w * LANES + r] = add ? S[w * LANES + r] + value : value;
        }
}

/* The states of paths x (rows, length, d; element strides xr, xt, xa): out (rows, D) holds the last, or with
   sequences out (rows, length, D) holds every one.  work: (2 D + (p + 1) d + 1) LANES numbers. */
static void scan_rows_SFX(int64_t rows, int64_t length, int64_t d, int64_t M, int64_t p, const int64_t *start,
                          const REAL *x, int64_t xr, int64_t xt, int64_t xa, REAL *out, int64_t sequences, REAL *work) {
    const int64_t D = start[M + 1];
    REAL *S = work, *U = S + D * LANES, *zk = U + D * LANES, *one = zk + (p + 1) * d * LANES;
    for (int64_t r = 0; r < LANES; r++) one[r] = 1;
    for (int64_t r0 = 0; r0 < rows; r0 += LANES) {
        const int64_t n = rows - r0 < LANES ? rows - r0 : LANES;
        memset(S, 0, D * LANES * sizeof(REAL));
        for (int64_t t = 0; t < length; t++) {
            load_step_SFX(zk, p, d, x + r0 * xr + t * xt, xr, xa, n);
            step_SFX(M, p, d, start, S, U, zk, one);
            if (sequences) store_SFX(out + (r0 * length + t) * D, length * D, S, D, n);
        }
        if (!sequences) store_SFX(out + r0 * D, D, S, D, n);
    }
}

/* The same on `threads` threads, work holding `each` numbers for each. */
typedef struct {
    int64_t rows, length, d, M, p, xr, xt, xa, sequences, each, paths;
    const int64_t *start;
    const REAL *x;
    REAL *out, *work;
} scan_job_SFX;
static void scan_chunk_SFX(const void *args, int64_t chunk, int64_t member) {
    const scan_job_SFX *j = args;
    const int64_t first = chunk * j->paths, stop = first + j->paths < j->rows ? first + j->paths : j->rows;
    scan_rows_SFX(stop - first, j->length, j->d, j->M, j->p, j->start, j->x + first * j->xr, j->xr, j->xt, j->xa,
                  j->out + first * (j->sequences ? j->length : 1) * j->start[j->M + 1], j->sequences,
                  j->work + member * j->each);
}
void scan_SFX(int64_t threads, int64_t openmp, int64_t rows, int64_t length, int64_t d, int64_t M, int64_t p,
              const int64_t *start, const REAL *x, int64_t xr, int64_t xt, int64_t xa, REAL *out, int64_t sequences,
              REAL *work, int64_t each) {
    int64_t chunks;
    const int64_t paths = chunk_blocks(rows, LANES, threads, &chunks);
    const scan_job_SFX job = {rows, length, d, M, p, xr, xt, xa, sequences, each, paths, start, x, out, work};
    parallel(scan_chunk_SFX, &job, chunks, threads, openmp);
}

/* du[i] = sum_a g[i d + a] z[a] and dz[a] += c sum_i g[i d + a] u[i], for i < n: the reverse of one Horner step
   out = u (x) c z (+ add), whose out-gradient is g. */
static void contract_SFX(REAL *du, REAL *dz, const REAL *g, const REAL *u, int64_t n, const REAL *z, REAL c,
                         int64_t d) {
    enum { V = LANES * sizeof(REAL) / sizeof(VEC) };
    for (int64_t i = 0; i < n; i++) {
        VEC cu[V], s[V];
        memcpy(cu, u + i * LANES, sizeof cu);
        for (int v = 0; v < V; v++) {
            cu[v] *= c;
            s[v] = (VEC){0};
        }
        for (int64_t a = 0; a < d; a++) {
            const VEC *gi = (const VEC *)(g + (i * d + a) * LANES), *q = (const VEC *)(z + a * LANES);
            VEC *o = (VEC *)(dz + a * LANES);
            for (int v = 0; v < V; v++) {
                s[v] += gi[v] * q[v];
                o[v] += gi[v] * cu[v];
            }
        }
        memcpy(du + i * LANES, s, sizeof s);
    }
}

/* The gradients of one step S' = S lift(z) at the state S before it: G = dL/dS' becomes dL/dS in place (levels
   ascend, so each is read before the higher ones add into it), and dz = dL/dz.  du holds two arrays of d^(M-1)
   words (`half` each). */
static void back_step_SFX(int64_t M, int64_t p, int64_t d, const int64_t *start, REAL *S, REAL *U, const REAL *zk,
                          const REAL *one, REAL *G, REAL *dz, REAL *du, int64_t half) {
    memset(dz, 0, d * LANES * sizeof(REAL));
    for (int64_t m = 1; m <= M; m++) {
        const int64_t q = m < p ? m : p;
        horner_SFX(m, p, d, start, S, U, zk, one, 0);
        int64_t n = start[m] - start[m - 1];                                       /* d^(m-1) words */
        const REAL *g = G + start[m] * LANES;
        for (int64_t k = 1; k <= q; k++) {
            const REAL *u = k < q ? U + start[m - k] * LANES : m == q ? one : S + start[m - q] * LANES;
            REAL *out = du + (k % 2) * half * LANES;
            contract_SFX(out, dz, g, u, n, zk + k * d * LANES, (REAL)1 / (REAL)k, d);
            if (m - k >= 1)
                for (int64_t w = 0; w < n * LANES; w++) G[start[m - k] * LANES + w] += out[w];
            g = out;
            n /= d;
        }
    }
}

/* dx (rows, length, d, contiguous) from g = dL/d(out) of scan_SFX (contiguous (rows, D), or (rows, length, D)
   with sequences).  The states are recomputed, not stored: a forward sweep keeps every K-th, and each segment of
   K steps is recomputed from its own.  work: ((ceil(length / K) + K + 2) D + 2 half + (p + 2) d + 1) LANES
   numbers, half = d^(M-1). */
static void scan_backward_rows_SFX(int64_t rows, int64_t length, int64_t d, int64_t M, int64_t p,
                                   const int64_t *start, const REAL *x, int64_t xr, int64_t xt, int64_t xa,
                                   const REAL *g, int64_t sequences, REAL *dx, int64_t K, REAL *work) {
    const int64_t D = start[M + 1], segments = (length + K - 1) / K, half = start[M] - start[M - 1];
    REAL *saved = work, *segment = saved + segments * D * LANES, *U = segment + K * D * LANES, *G = U + D * LANES,
         *du = G + D * LANES, *zk = du + 2 * half * LANES, *dz = zk + (p + 1) * d * LANES, *one = dz + d * LANES;
    for (int64_t r = 0; r < LANES; r++) one[r] = 1;
    for (int64_t r0 = 0; r0 < rows; r0 += LANES) {
        const int64_t n = rows - r0 < LANES ? rows - r0 : LANES;
        const REAL *xs = x + r0 * xr;
        memset(segment, 0, D * LANES * sizeof(REAL));
        for (int64_t t = 0; t < length; t++) {
            if (t % K == 0) memcpy(saved + t / K * D * LANES, segment, D * LANES * sizeof(REAL));
            load_step_SFX(zk, p, d, xs + t * xt, xr, xa, n);
            step_SFX(M, p, d, start, segment, U, zk, one);
        }
        if (sequences) load_SFX(G, g + (r0 * length + length - 1) * D, length * D, D, n, 0);
        else load_SFX(G, g + r0 * D, D, D, n, 0);
        for (int64_t c = segments - 1; c >= 0; c--) {
            const int64_t t0 = c * K, t1 = t0 + K < length ? t0 + K : length;
            memcpy(segment, saved + c * D * LANES, D * LANES * sizeof(REAL));
            for (int64_t t = t0 + 1; t < t1; t++) {
                REAL *S = segment + (t - t0) * D * LANES;
                memcpy(S, S - D * LANES, D * LANES * sizeof(REAL));
                load_step_SFX(zk, p, d, xs + (t - 1) * xt, xr, xa, n);
                step_SFX(M, p, d, start, S, U, zk, one);
            }
            for (int64_t t = t1 - 1; t >= t0; t--) {
                load_step_SFX(zk, p, d, xs + t * xt, xr, xa, n);
                back_step_SFX(M, p, d, start, segment + (t - t0) * D * LANES, U, zk, one, G, dz, du, half);
                store_SFX(dx + (r0 * length + t) * d, length * d, dz, d, n);
                if (sequences && t >= 1) load_SFX(G, g + (r0 * length + t - 1) * D, length * D, D, n, 1);
            }
        }
    }
}

/* The same on `threads` threads, work holding `each` numbers for each. */
typedef struct {
    int64_t rows, length, d, M, p, xr, xt, xa, sequences, K, each, paths;
    const int64_t *start;
    const REAL *x, *g;
    REAL *dx, *work;
} scan_backward_job_SFX;
static void scan_backward_chunk_SFX(const void *args, int64_t chunk, int64_t member) {
    const scan_backward_job_SFX *j = args;
    const int64_t first = chunk * j->paths, stop = first + j->paths < j->rows ? first + j->paths : j->rows;
    scan_backward_rows_SFX(stop - first, j->length, j->d, j->M, j->p, j->start, j->x + first * j->xr, j->xr, j->xt,
                           j->xa, j->g + first * (j->sequences ? j->length : 1) * j->start[j->M + 1], j->sequences,
                           j->dx + first * j->length * j->d, j->K, j->work + member * j->each);
}
void scan_backward_SFX(int64_t threads, int64_t openmp, int64_t rows, int64_t length, int64_t d, int64_t M,
                       int64_t p, const int64_t *start, const REAL *x, int64_t xr, int64_t xt, int64_t xa,
                       const REAL *g, int64_t sequences, REAL *dx, int64_t K, REAL *work, int64_t each) {
    int64_t chunks;
    const int64_t paths = chunk_blocks(rows, LANES, threads, &chunks);
    const scan_backward_job_SFX job = {rows, length, d, M, p, xr, xt, xa, sequences, K, each, paths, start, x, g, dx,
                                       work};
    parallel(scan_backward_chunk_SFX, &job, chunks, threads, openmp);
}
"""


def _scan(dtype: np.dtype[Any], ctype: str) -> str:
    """The scan's functions for one dtype (its name suffixes them)."""
    text = _SCAN
    for token, value in (("SFX", dtype.name), ("REAL", ctype), ("VEC", f"scan_{ctype}"), ("LANES", str(LANES[dtype]))):
        text = text.replace(token, value)
    return text


SOURCE = f"#define ALIGNMENT {ALIGNMENT}\n" + \
    "".join(f"#define {loop.upper()}_BYTES {size}\n" for loop, size in VECTOR_BYTES.items()) + _PRODUCT + \
    "".join(f"TRANSPOSE({ctype})\n" + "".join(f"PRODUCT(product_{dtype.name}_{rows}, {ctype}, {rows})\n"
                                             for rows in (BLOCK[dtype], WIDE_BLOCK[dtype]))
            for dtype, ctype in _TYPES) +                                                                              \
    "".join(_scan(dtype, ctype) for dtype, ctype in _TYPES)
