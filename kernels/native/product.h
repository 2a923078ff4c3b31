/* Template, included by loops.c once per number type T and block size B: the function NAME, the sparse
   bilinear product on blocks of B rows.

   z[r, k] = sum over the terms t of z_k of cc[t] * x[r, i_t] * y[r, j_t], for rows r < rows, the terms in groups
   that share their x index: groups g in starts[k] .. starts[k + 1], group g with x index i_g and terms
   gt[g] .. gt[g + 1], so z_k = sum_g x_i_g (sum_t cc[t] y_j_t): one load of x per group.  The indices come scaled
   by B, as offsets into the working buffer: gi[g] = i_g B and jj[t] = j_t B (one instruction less per term).
   x and y are read through element strides (row, component), so any layout and broadcast rows (stride 0) serve;
   z is written row by row, d3 numbers each.  work holds (d1 + d2 + d3) * B numbers: the components of one block of
   B rows, transposed (by tiles where a row's components are adjacent; a last, partial block's empty lanes
   zeroed, so that no garbage, such as a subnormal number, slows its arithmetic), so that each term is B / W vector
   multiply-adds (W numbers per vector), and each group B / W more, into accumulators held in registers; and the
   block's outputs, transposed back into z at the end of the block. */
#define VEC PASTE(vec_, T)
static void PASTE(NAME, _rows)(int64_t rows, int64_t d1, int64_t d2, int64_t d3,
                               const T *x, int64_t xr, int64_t xa, const T *y, int64_t yr, int64_t ya, T *z,
                               const int64_t *starts, const int64_t *gi, const int64_t *gt, const int64_t *jj,
                               const T *cc, T *work) {
    enum { V = B * sizeof(T) / sizeof(VEC) };
    T *xt = work, *yt = work + d1 * B, *zt = yt + d2 * B;
    for (int64_t r0 = 0; r0 < rows; r0 += B) {
        int64_t n = rows - r0 < B ? rows - r0 : B;
        if (xa == 1) PASTE(transpose_, T)(xt, B, x + r0 * xr, xr, n, d1);
        else for (int64_t a = 0; a < d1; a++)
            for (int64_t r = 0; r < n; r++) xt[a * B + r] = x[(r0 + r) * xr + a * xa];
        if (ya == 1) PASTE(transpose_, T)(yt, B, y + r0 * yr, yr, n, d2);
        else for (int64_t b = 0; b < d2; b++)
            for (int64_t r = 0; r < n; r++) yt[b * B + r] = y[(r0 + r) * yr + b * ya];
        for (int64_t a = 0; n < B && a < d1 + d2; a++) memset(xt + a * B + n, 0, (B - n) * sizeof(T));
        for (int64_t k = 0; k < d3; k++) {
            VEC acc[V];
            for (int v = 0; v < V; v++) acc[v] = (VEC){0};
            for (int64_t g = starts[k]; g < starts[k + 1]; g++) {
                VEC inner[V];
                for (int v = 0; v < V; v++) inner[v] = (VEC){0};
                for (int64_t t = gt[g]; t < gt[g + 1]; t++) {
                    const VEC *q = (const VEC *)(yt + jj[t]);
                    const T c = cc[t];
                    for (int v = 0; v < V; v++) inner[v] += c * q[v];
                }
                const VEC *p = (const VEC *)(xt + gi[g]);
                for (int v = 0; v < V; v++) acc[v] += p[v] * inner[v];
            }
            memcpy(zt + k * B, acc, sizeof acc);
        }
        PASTE(transpose_, T)(z + r0 * d3, d3, zt, B, d3, n);
    }
}
/* The same on `threads` threads, work holding (d1 + d2 + d3) B numbers for each, or NULL: then allocated here (one
   allocation, freed on return; nothing to zero, as above).  Returns 0, or 1 when that allocation fails. */
typedef struct {
    int64_t rows, d1, d2, d3, xr, xa, yr, ya, each;
    const T *x, *y, *cc;
    T *z, *work;
    const int64_t *starts, *gi, *gt, *jj;
} PASTE(NAME, _job);
static void PASTE(NAME, _chunk)(const void *args, int64_t chunk, int64_t member) {
    const PASTE(NAME, _job) *j = args;
    const int64_t first = chunk * j->each, stop = first + j->each < j->rows ? first + j->each : j->rows;
    PASTE(NAME, _rows)(stop - first, j->d1, j->d2, j->d3, j->x + first * j->xr, j->xr, j->xa,
                       j->y + first * j->yr, j->yr, j->ya, j->z + first * j->d3, j->starts, j->gi, j->gt, j->jj,
                       j->cc, j->work + member * (j->d1 + j->d2 + j->d3) * B);
}
int NAME(int64_t threads, int64_t openmp, int64_t rows, int64_t d1, int64_t d2, int64_t d3,
         const T *x, int64_t xr, int64_t xa, const T *y, int64_t yr, int64_t ya, T *z,
         const int64_t *starts, const int64_t *gi, const int64_t *gt, const int64_t *jj, const T *cc, T *work) {
    int64_t chunks;
    const int64_t each = chunk_blocks(rows, B, threads, &chunks);
    const size_t bytes = (size_t)(threads * (d1 + d2 + d3) * B) * sizeof(T) / ALIGNMENT * ALIGNMENT + ALIGNMENT;
    T *own = work ? NULL : aligned_alloc(ALIGNMENT, bytes);
    if (!work && !own) return 1;
    const PASTE(NAME, _job) job = {rows, d1, d2, d3, xr, xa, yr, ya, each, x, y, cc, z, work ? work : own,
                                   starts, gi, gt, jj};
    parallel(PASTE(NAME, _chunk), &job, chunks, threads, openmp);
    free(own);
    return 0;
}
#undef VEC
