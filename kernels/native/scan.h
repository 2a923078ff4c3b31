#define FN(name) PASTE(name, PASTE(_, SUFFIX))
#define SVEC PASTE(scan_, T)
/* Template, included by loops.c once per number type T (SUFFIX its numpy name, LANES paths per block): the
   Seq2Tens scan scan_SUFFIX and its gradient scan_backward_SUFFIX.

   The Seq2Tens scan (kernels/scans/seq2tens.py): the product over time of the lifts sum_{k<=p} z_t^k / k! of the steps
   z_t in the tensor algebra truncated at degree M, for LANES paths at a time.  A state holds levels 1..M; level m
   has d^m words (row-major) from word start[m], start[M + 1] words in all (start[0] = -1: level 0 is one word).
   Each word is LANES numbers, one per path, so every operation below is a vector operation across paths.
   zk + k d LANES holds the step z / k (k = 1..p) and `one` is level 0 (all ones). */

/* out[i d + a] = u[i] z[a] + add[i d + a] for i < n, a < d (out may be add): one step of Horner's rule. */
static void FN(outer_add)(T *out, const T *u, int64_t n, const T *z, const T *add, int64_t d) {
    enum { V = LANES * sizeof(T) / sizeof(SVEC) };
    for (int64_t i = 0; i < n; i++) {
        SVEC p[V];
        memcpy(p, u + i * LANES, sizeof p);
        for (int64_t a = 0; a < d; a++) {
            const SVEC *q = (const SVEC *)(z + a * LANES), *s = (const SVEC *)(add + (i * d + a) * LANES);
            SVEC *o = (SVEC *)(out + (i * d + a) * LANES);
            for (int v = 0; v < V; v++) o[v] = p[v] * q[v] + s[v];
        }
    }
}

/* Horner's rule for level m, q = min(m, p): u_q = S_{m-q}, u_{k-1} = u_k z / k + S_{m-k+1} for k = q..2 (u_k, of
   level m - k, kept at U + start[m - k] for the backward pass), and with last = 1 the update S_m += u_1 z. */
static void FN(horner)(int64_t m, int64_t p, int64_t d, const int64_t *start, T *S, T *U, const T *zk,
                       const T *one, int last) {
    const int64_t q = m < p ? m : p;
    int64_t n = start[m - q + 1] - start[m - q];
    const T *u = m == q ? one : S + start[m - q] * LANES;
    for (int64_t k = q; k >= 2 - last; k--) {
        T *out = (k == 1 ? S : U) + start[m - k + 1] * LANES;
        FN(outer_add)(out, u, n, zk + k * d * LANES, S + start[m - k + 1] * LANES, d);
        u = out;
        n *= d;
    }
}

/* S <- S lift(z): levels from the top down, each reading only the levels below it. */
static void FN(step)(int64_t M, int64_t p, int64_t d, const int64_t *start, T *S, T *U, const T *zk,
                     const T *one) {
    for (int64_t m = M; m >= 1; m--) FN(horner)(m, p, d, start, S, U, zk, one, 1);
}

/* zk <- z / k for k = 1..p, z read from x (paths r < n at x + r xr, coordinates a at stride xa); lanes >= n get 0. */
static void FN(load_step)(T *zk, int64_t p, int64_t d, const T *x, int64_t xr, int64_t xa, int64_t n) {
    for (int64_t a = 0; a < d; a++)
        for (int64_t r = 0; r < LANES; r++) zk[(d + a) * LANES + r] = r < n ? x[r * xr + a * xa] : 0;
    for (int64_t k = 2; k <= p; k++)
        for (int64_t w = 0; w < d * LANES; w++) zk[k * d * LANES + w] = zk[d * LANES + w] / (T)k;
}

/* store: lanes r < n of the D words at S to out + r stride (out of the lanes).  load: the D numbers at
   g + r stride into lane r < n of S (lanes >= n get 0), replacing S's words or, with add = 1, added to them. */
static void FN(store)(T *out, int64_t stride, const T *S, int64_t D, int64_t n) {
    for (int64_t r = 0; r < n; r++)
        for (int64_t w = 0; w < D; w++) out[r * stride + w] = S[w * LANES + r];
}
static void FN(load)(T *S, const T *g, int64_t stride, int64_t D, int64_t n, int add) {
    for (int64_t w = 0; w < D; w++)
        for (int64_t r = 0; r < LANES; r++) {
            T value = r < n ? g[r * stride + w] : 0;
            S[w * LANES + r] = add ? S[w * LANES + r] + value : value;
        }
}

/* The states of paths x (rows, length, d; element strides xr, xt, xa): out (rows, D) holds the last, or with
   sequences out (rows, length, D) holds every one.  With kept (not NULL), the states before steps 0, K, 2K, ...
   are kept there for the gradient, as they are held: (ceil(rows / LANES), ceil(length / K), D, LANES).  work:
   (2 D + (p + 1) d + 1) LANES numbers. */
static void FN(scan_rows)(int64_t rows, int64_t length, int64_t d, int64_t M, int64_t p, const int64_t *start,
                          const T *x, int64_t xr, int64_t xt, int64_t xa, T *out, int64_t sequences, T *kept,
                          int64_t K, T *work) {
    const int64_t D = start[M + 1], segments = (length + K - 1) / K;
    T *S = work, *U = S + D * LANES, *zk = U + D * LANES, *one = zk + (p + 1) * d * LANES;
    for (int64_t r = 0; r < LANES; r++) one[r] = 1;
    for (int64_t r0 = 0; r0 < rows; r0 += LANES) {
        const int64_t n = rows - r0 < LANES ? rows - r0 : LANES;
        memset(S, 0, D * LANES * sizeof(T));
        for (int64_t t = 0; t < length; t++) {
            if (kept && t % K == 0) memcpy(kept + (r0 * segments + t / K * LANES) * D, S, D * LANES * sizeof(T));
            FN(load_step)(zk, p, d, x + r0 * xr + t * xt, xr, xa, n);
            FN(step)(M, p, d, start, S, U, zk, one);
            if (sequences) FN(store)(out + (r0 * length + t) * D, length * D, S, D, n);
        }
        if (!sequences) FN(store)(out + r0 * D, D, S, D, n);
    }
}

/* The same on `threads` threads, work holding `each` numbers for each. */
typedef struct {
    int64_t rows, length, d, M, p, xr, xt, xa, sequences, K, each, paths;
    const int64_t *start;
    const T *x;
    T *out, *kept, *work;
} FN(scan_job);
static void FN(scan_chunk)(const void *args, int64_t chunk, int64_t member) {
    const FN(scan_job) *j = args;
    const int64_t first = chunk * j->paths, stop = first + j->paths < j->rows ? first + j->paths : j->rows;
    FN(scan_rows)(stop - first, j->length, j->d, j->M, j->p, j->start, j->x + first * j->xr, j->xr, j->xt, j->xa,
                  j->out + first * (j->sequences ? j->length : 1) * j->start[j->M + 1], j->sequences,
                  KEPT_AT(j->kept, first, j->length, j->K, j->start[j->M + 1]), j->K,
                  j->work + member * j->each);
}
void FN(scan)(int64_t threads, int64_t openmp, int64_t rows, int64_t length, int64_t d, int64_t M, int64_t p,
              const int64_t *start, const T *x, int64_t xr, int64_t xt, int64_t xa, T *out, int64_t sequences,
              T *kept, int64_t K, T *work, int64_t each) {
    int64_t chunks;
    const int64_t paths = chunk_blocks(rows, LANES, threads, &chunks);
    const FN(scan_job) job = {rows, length, d, M, p, xr, xt, xa, sequences, K, each, paths, start, x, out, kept,
                              work};
    parallel(FN(scan_chunk), &job, chunks, threads, openmp);
}

/* du[i] = sum_a g[i d + a] z[a] and dz[a] += c sum_i g[i d + a] u[i], for i < n: the reverse of one Horner step
   out = u (x) c z (+ add), whose out-gradient is g. */
static void FN(contract)(T *du, T *dz, const T *g, const T *u, int64_t n, const T *z, T c,
                         int64_t d) {
    enum { V = LANES * sizeof(T) / sizeof(SVEC) };
    for (int64_t i = 0; i < n; i++) {
        SVEC cu[V], s[V];
        memcpy(cu, u + i * LANES, sizeof cu);
        for (int v = 0; v < V; v++) {
            cu[v] *= c;
            s[v] = (SVEC){0};
        }
        for (int64_t a = 0; a < d; a++) {
            const SVEC *gi = (const SVEC *)(g + (i * d + a) * LANES), *q = (const SVEC *)(z + a * LANES);
            SVEC *o = (SVEC *)(dz + a * LANES);
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
static void FN(back_step)(int64_t M, int64_t p, int64_t d, const int64_t *start, T *S, T *U, const T *zk,
                          const T *one, T *G, T *dz, T *du, int64_t half) {
    memset(dz, 0, d * LANES * sizeof(T));
    for (int64_t m = 1; m <= M; m++) {
        const int64_t q = m < p ? m : p;
        FN(horner)(m, p, d, start, S, U, zk, one, 0);
        int64_t n = start[m] - start[m - 1];                                       /* d^(m-1) words */
        const T *g = G + start[m] * LANES;
        for (int64_t k = 1; k <= q; k++) {
            const T *u = k < q ? U + start[m - k] * LANES : m == q ? one : S + start[m - q] * LANES;
            T *out = du + (k % 2) * half * LANES;
            FN(contract)(out, dz, g, u, n, zk + k * d * LANES, (T)1 / (T)k, d);
            if (m - k >= 1)
                for (int64_t w = 0; w < n * LANES; w++) G[start[m - k] * LANES + w] += out[w];
            g = out;
            n /= d;
        }
    }
}

/* dx (rows, length, d, contiguous) from g = dL/d(out) of FN(scan) (contiguous (rows, D), or (rows, length, D)
   with sequences).  The states are recomputed, not stored: from every K-th (the forward's kept ones, or, where
   kept is NULL, those of a forward sweep here), each segment of K steps.  work: ((K + 2) D + 2 half + (p + 2) d
   + 1) LANES numbers, half = d^(M-1), and ceil(length / K) D LANES more where kept is NULL. */
static void FN(scan_backward_rows)(int64_t rows, int64_t length, int64_t d, int64_t M, int64_t p,
                                   const int64_t *start, const T *x, int64_t xr, int64_t xt, int64_t xa,
                                   const T *g, int64_t sequences, T *dx, const T *kept, int64_t K, T *work) {
    const int64_t D = start[M + 1], segments = (length + K - 1) / K, half = start[M] - start[M - 1];
    T *segment = work, *U = segment + K * D * LANES, *G = U + D * LANES, *du = G + D * LANES,
      *zk = du + 2 * half * LANES, *dz = zk + (p + 1) * d * LANES, *one = dz + d * LANES, *own = one + LANES;
    for (int64_t r = 0; r < LANES; r++) one[r] = 1;
    for (int64_t r0 = 0; r0 < rows; r0 += LANES) {
        const int64_t n = rows - r0 < LANES ? rows - r0 : LANES;
        const T *xs = x + r0 * xr, *saved = kept ? kept + r0 * segments * D : own;
        if (!kept) {
            memset(segment, 0, D * LANES * sizeof(T));
            for (int64_t t = 0; t < length; t++) {
                if (t % K == 0) memcpy(own + t / K * D * LANES, segment, D * LANES * sizeof(T));
                FN(load_step)(zk, p, d, xs + t * xt, xr, xa, n);
                FN(step)(M, p, d, start, segment, U, zk, one);
            }
        }
        if (sequences) FN(load)(G, g + (r0 * length + length - 1) * D, length * D, D, n, 0);
        else FN(load)(G, g + r0 * D, D, D, n, 0);
        for (int64_t c = segments - 1; c >= 0; c--) {
            const int64_t t0 = c * K, t1 = t0 + K < length ? t0 + K : length;
            memcpy(segment, saved + c * D * LANES, D * LANES * sizeof(T));
            for (int64_t t = t0 + 1; t < t1; t++) {
                T *S = segment + (t - t0) * D * LANES;
                memcpy(S, S - D * LANES, D * LANES * sizeof(T));
                FN(load_step)(zk, p, d, xs + (t - 1) * xt, xr, xa, n);
                FN(step)(M, p, d, start, S, U, zk, one);
            }
            for (int64_t t = t1 - 1; t >= t0; t--) {
                FN(load_step)(zk, p, d, xs + t * xt, xr, xa, n);
                FN(back_step)(M, p, d, start, segment + (t - t0) * D * LANES, U, zk, one, G, dz, du, half);
                FN(store)(dx + (r0 * length + t) * d, length * d, dz, d, n);
                if (sequences && t >= 1) FN(load)(G, g + (r0 * length + t - 1) * D, length * D, D, n, 1);
            }
        }
    }
}

/* The same on `threads` threads, work holding `each` numbers for each. */
typedef struct {
    int64_t rows, length, d, M, p, xr, xt, xa, sequences, K, each, paths;
    const int64_t *start;
    const T *x, *g, *kept;
    T *dx, *work;
} FN(scan_backward_job);
static void FN(scan_backward_chunk)(const void *args, int64_t chunk, int64_t member) {
    const FN(scan_backward_job) *j = args;
    const int64_t first = chunk * j->paths, stop = first + j->paths < j->rows ? first + j->paths : j->rows;
    FN(scan_backward_rows)(stop - first, j->length, j->d, j->M, j->p, j->start, j->x + first * j->xr, j->xr, j->xt,
                           j->xa, j->g + first * (j->sequences ? j->length : 1) * j->start[j->M + 1], j->sequences,
                           j->dx + first * j->length * j->d,
                           KEPT_AT(j->kept, first, j->length, j->K, j->start[j->M + 1]),
                           j->K, j->work + member * j->each);
}
void FN(scan_backward)(int64_t threads, int64_t openmp, int64_t rows, int64_t length, int64_t d, int64_t M,
                       int64_t p, const int64_t *start, const T *x, int64_t xr, int64_t xt, int64_t xa,
                       const T *g, int64_t sequences, T *dx, const T *kept, int64_t K, T *work, int64_t each) {
    int64_t chunks;
    const int64_t paths = chunk_blocks(rows, LANES, threads, &chunks);
    const FN(scan_backward_job) job = {rows, length, d, M, p, xr, xt, xa, sequences, K, each, paths, start, x, g,
                                       kept, dx, work};
    parallel(FN(scan_backward_chunk), &job, chunks, threads, openmp);
}
#undef SVEC
#undef FN
