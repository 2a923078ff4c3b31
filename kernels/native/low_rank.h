#define FN(name) PASTE(name, PASTE(_, SUFFIX))
/* Template, included by loops.c once per number type T (SUFFIX its numpy name): the rank-1 functionals of LS2T
   (kernels/scans/low_rank.py), low_rank_SUFFIX, and their gradient, low_rank_backward_SUFFIX.

   A path x (length, h) meets S slots of N functionals' factors, V (h, S, N) contiguous: z_s(t) = <V[:, s], x_t>,
   W = S N words.  Slot s continues the chain of its parent p = parent[s] < s (or starts one, p = -1):
   R_s(t) = z_s(t) E_p(t - 1), E_s(t) = sum_{u <= t} R_s(u), with E_-1 = 1 and E_p(-1) = 0.  Level m (m < M) is
   E_level[m]: at the last step, or at every step with sequences.  One path at a time; every loop runs along the N
   functionals of a slot (contiguous), so the compiler makes vector operations of them. */

/* z = x V: z[w] = sum_a x[a xa] V[a W + w], LR_PARTS words at a time summed in registers. */
#ifndef LR_PARTS
#define LR_PARTS (int)(64 / sizeof(T))           /* two 32-byte vectors of numbers */
#endif
static void FN(lr_project)(T *restrict z, const T *x, int64_t xa, int64_t h, const T *restrict V, int64_t W) {
    int64_t w = 0;
    for (; w + LR_PARTS <= W; w += LR_PARTS) {
        T part[LR_PARTS] = {0};
        for (int64_t a = 0; a < h; a++) {
            const T c = x[a * xa];
            for (int i = 0; i < LR_PARTS; i++) part[i] += c * V[a * W + w + i];
        }
        memcpy(z + w, part, sizeof part);
    }
    for (; w < W; w++) {
        T sum = 0;
        for (int64_t a = 0; a < h; a++) sum += x[a * xa] * V[a * W + w];
        z[w] = sum;
    }
}

/* E <- E after step t, z holding z(t): children first (a parent's index is smaller), so each reads E_p(t - 1). */
static void FN(lr_step)(T *E, const T *restrict z, int64_t S, int64_t N, const int64_t *parent) {
    for (int64_t s = S - 1; s >= 0; s--) {
        T *restrict e = E + s * N;
        const T *restrict q = z + s * N;
        if (parent[s] < 0) {
            for (int64_t n = 0; n < N; n++) e[n] += q[n];
        } else {
            const T *restrict p = E + parent[s] * N;
            for (int64_t n = 0; n < N; n++) e[n] += q[n] * p[n];
        }
    }
}

/* out[m N + n] = E[level[m] N + n]. */
static void FN(lr_levels)(T *out, const T *E, int64_t M, int64_t N, const int64_t *level) {
    for (int64_t m = 0; m < M; m++) memcpy(out + m * N, E + level[m] * N, N * sizeof(T));
}

/* Paths x (rows, length, h; element strides xr, xt, xa) into out (rows, M, N), or (rows, length, M, N) with
   sequences.  With kept (not NULL), the states before steps 0, K, 2K, ... are kept there for the gradient,
   (rows, ceil(length / K), W).  work: 2 W numbers. */
static void FN(low_rank_rows)(int64_t rows, int64_t length, int64_t h, int64_t S, int64_t N, int64_t M,
                              const int64_t *parent, const int64_t *level, const T *x, int64_t xr, int64_t xt,
                              int64_t xa, const T *V, T *out, int64_t sequences, T *kept, int64_t K, T *work) {
    const int64_t W = S * N, segments = (length + K - 1) / K;
    T *E = work, *z = E + W;
    for (int64_t r = 0; r < rows; r++) {
        memset(E, 0, W * sizeof(T));
        for (int64_t t = 0; t < length; t++) {
            if (kept && t % K == 0) memcpy(kept + (r * segments + t / K) * W, E, W * sizeof(T));
            FN(lr_project)(z, x + r * xr + t * xt, xa, h, V, W);
            FN(lr_step)(E, z, S, N, parent);
            if (sequences) FN(lr_levels)(out + (r * length + t) * M * N, E, M, N, level);
        }
        if (!sequences) FN(lr_levels)(out + r * M * N, E, M, N, level);
    }
}

typedef struct {
    int64_t rows, length, h, S, N, M, xr, xt, xa, sequences, each, paths, K;
    const int64_t *parent, *level;
    const T *x, *V, *g;
    T *out, *dx, *dV, *kept, *work;
} FN(lr_job);

static void FN(low_rank_chunk)(const void *args, int64_t chunk, int64_t member) {
    const FN(lr_job) *j = args;
    const int64_t first = chunk * j->paths, stop = first + j->paths < j->rows ? first + j->paths : j->rows;
    FN(low_rank_rows)(stop - first, j->length, j->h, j->S, j->N, j->M, j->parent, j->level, j->x + first * j->xr,
                      j->xr, j->xt, j->xa, j->V, j->out + first * (j->sequences ? j->length : 1) * j->M * j->N,
                      j->sequences, KEPT_AT(j->kept, first, j->length, j->K, j->S * j->N), j->K,
                      j->work + member * j->each);
}

/* The same on `threads` threads, work holding `each` numbers for each; kept as in FN(low_rank_rows) (or NULL). */
void FN(low_rank)(int64_t threads, int64_t openmp, int64_t rows, int64_t length, int64_t h, int64_t S, int64_t N,
                  int64_t M, const int64_t *parent, const int64_t *level, const T *x, int64_t xr, int64_t xt,
                  int64_t xa, const T *V, T *out, int64_t sequences, T *kept, int64_t K, T *work, int64_t each) {
    int64_t chunks;
    const int64_t paths = chunk_blocks(rows, 1, threads, &chunks);
    const FN(lr_job) job = {rows, length, h, S, N, M, xr, xt, xa, sequences, each, paths, K, parent, level, x, V,
                            NULL, out, NULL, NULL, kept, work};
    parallel(FN(low_rank_chunk), &job, chunks, threads, openmp);
}

/* sum_w a[w] v[w], in LR_PARTS running sums (one sum's chain of additions would wait on each), and dv += c a. */
static T FN(lr_dot_update)(const T *restrict a, const T *restrict v, T *restrict dv, T c, int64_t W) {
    T part[LR_PARTS] = {0}, sum = 0;
    int64_t w = 0;
    for (; w + LR_PARTS <= W; w += LR_PARTS)
        for (int i = 0; i < LR_PARTS; i++) {
            part[i] += a[w + i] * v[w + i];
            dv[w + i] += c * a[w + i];
        }
    for (; w < W; w++) {
        sum += a[w] * v[w];
        dv[w] += c * a[w];
    }
    for (int i = 0; i < LR_PARTS; i++) sum += part[i];
    return sum;
}

/* The reverse of step t at B = E(t - 1), z = z(t), gt the out-gradient of step t (M N numbers) or NULL.  H holds
   A_s = dL/dR_s(t + 1) and becomes dL/dR_s(t) (the out-gradients of E_s from step t on); D holds what the children's
   R(t + 1) give E(t) and becomes what R(t) gives E(t - 1).  Then dx_t = V dz and dV += x_t dz. */
static void FN(lr_back_step)(int64_t h, int64_t S, int64_t N, int64_t M, const int64_t *parent, const int64_t *level,
                             const T *B, const T *z, const T *gt, T *H, T *D, T *dz, const T *x, int64_t xa,
                             const T *V, T *dx, T *dV) {
    const int64_t W = S * N;
    for (int64_t w = 0; w < W; w++) H[w] += D[w];
    if (gt)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) H[level[m] * N + n] += gt[m * N + n];
    memset(D, 0, W * sizeof(T));
    for (int64_t s = 0; s < S; s++) {
        const T *restrict a = H + s * N, *restrict q = z + s * N;
        T *restrict o = dz + s * N;
        if (parent[s] < 0) {
            memcpy(o, a, N * sizeof(T));
        } else {
            const T *restrict p = B + parent[s] * N;
            T *restrict d = D + parent[s] * N;
            for (int64_t n = 0; n < N; n++) {
                o[n] = a[n] * p[n];
                d[n] += a[n] * q[n];
            }
        }
    }
    for (int64_t c = 0; c < h; c++) dx[c] = FN(lr_dot_update)(dz, V + c * W, dV + c * W, x[c * xa], W);
}

/* dx (rows, length, h, contiguous) and dV += (h, S, N) from g = dL/d(out) of FN(low_rank) (contiguous).  The
   states are recomputed, not stored: from every K-th (the forward's kept ones, or, where kept is NULL, those of a
   forward sweep here), each segment of K steps with its projections.  work: (2 K + 3) W numbers, and
   ceil(length / K) W more where kept is NULL. */
static void FN(low_rank_backward_rows)(int64_t rows, int64_t length, int64_t h, int64_t S, int64_t N, int64_t M,
                                       const int64_t *parent, const int64_t *level, const T *x, int64_t xr,
                                       int64_t xt, int64_t xa, const T *V, const T *g, int64_t sequences, T *dx,
                                       T *dV, const T *kept, int64_t K, T *work) {
    const int64_t W = S * N, segments = (length + K - 1) / K;
    T *segment = work, *zs = segment + K * W, *H = zs + K * W, *D = H + W, *dz = D + W, *own = dz + W;
    for (int64_t r = 0; r < rows; r++) {
        const T *xs = x + r * xr, *saved = kept ? kept + r * segments * W : own;
        if (!kept) {
            memset(segment, 0, W * sizeof(T));
            for (int64_t t = 0; t < length; t++) {
                if (t % K == 0) memcpy(own + t / K * W, segment, W * sizeof(T));
                FN(lr_project)(zs, xs + t * xt, xa, h, V, W);
                FN(lr_step)(segment, zs, S, N, parent);
            }
        }
        memset(H, 0, W * sizeof(T));
        memset(D, 0, W * sizeof(T));
        for (int64_t c = segments - 1; c >= 0; c--) {
            const int64_t t0 = c * K, t1 = t0 + K < length ? t0 + K : length;
            memcpy(segment, saved + c * W, W * sizeof(T));
            for (int64_t t = t0; t < t1; t++) {
                FN(lr_project)(zs + (t - t0) * W, xs + t * xt, xa, h, V, W);
                if (t + 1 == t1) break;
                T *E = segment + (t + 1 - t0) * W;
                memcpy(E, E - W, W * sizeof(T));
                FN(lr_step)(E, zs + (t - t0) * W, S, N, parent);
            }
            for (int64_t t = t1 - 1; t >= t0; t--) {
                const T *gt = sequences ? g + (r * length + t) * M * N : t == length - 1 ? g + r * M * N : NULL;
                FN(lr_back_step)(h, S, N, M, parent, level, segment + (t - t0) * W, zs + (t - t0) * W, gt, H, D, dz,
                                 xs + t * xt, xa, V, dx + (r * length + t) * h, dV);
            }
        }
    }
}

static void FN(low_rank_backward_chunk)(const void *args, int64_t chunk, int64_t member) {
    const FN(lr_job) *j = args;
    const int64_t first = chunk * j->paths, stop = first + j->paths < j->rows ? first + j->paths : j->rows;
    FN(low_rank_backward_rows)(stop - first, j->length, j->h, j->S, j->N, j->M, j->parent, j->level,
                               j->x + first * j->xr, j->xr, j->xt, j->xa, j->V,
                               j->g + first * (j->sequences ? j->length : 1) * j->M * j->N, j->sequences,
                               j->dx + first * j->length * j->h, j->dV + chunk * j->h * j->S * j->N,
                               KEPT_AT(j->kept, first, j->length, j->K, j->S * j->N),
                               j->K, j->work + member * j->each);
}

/* The same on `threads` threads, work holding `each` numbers for each, and dV one (h, S, N) sum for each chunk of
   paths (zeroed by the caller, at least min(rows, 4 threads) of them with threads > 1; their sum in order is the
   gradient, the same numbers whichever thread ran a chunk); kept: FN(low_rank)'s with the same K, or NULL. */
void FN(low_rank_backward)(int64_t threads, int64_t openmp, int64_t rows, int64_t length, int64_t h, int64_t S,
                           int64_t N, int64_t M, const int64_t *parent, const int64_t *level, const T *x, int64_t xr,
                           int64_t xt, int64_t xa, const T *V, const T *g, int64_t sequences, T *dx, T *dV,
                           const T *kept, int64_t K, T *work, int64_t each) {
    int64_t chunks;
    const int64_t paths = chunk_blocks(rows, 1, threads, &chunks);
    const FN(lr_job) job = {rows, length, h, S, N, M, xr, xt, xa, sequences, each, paths, K, parent, level, x, V, g,
                            NULL, dx, dV, (T *)kept, work};
    parallel(FN(low_rank_backward_chunk), &job, chunks, threads, openmp);
}
#undef FN
