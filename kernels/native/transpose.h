/* Template, included once per number type T by loops.c: transpose_T, the tiled transposition.

   dst[c * ds + r] = src[r * ss + c] for r < rows, c < cols: tiles of 8 x 8 numbers through vector shuffles where
   the compiler has them (GCC 12 or later, clang: SHUFFLE), the rest one number at a time.  It moves each block of
   rows into and out of the product's working buffer, where one number at a time took a third of the time of a
   CG(4) product (float32). */
#define TILE PASTE(tile_, T)
typedef T TILE __attribute__((vector_size(8 * sizeof(T)), aligned(sizeof(T)), may_alias));
static void PASTE(transpose_, T)(T *dst, int64_t ds, const T *src, int64_t ss, int64_t rows, int64_t cols) {
    int64_t r0 = 0;
#ifdef SHUFFLE
    /* Rows r0 .. r0 + 7 in tiles: b pairs rows (even, odd columns), e pairs those (columns j and j + 4), and the
       last shuffle joins rows 0-3 and 4-7 of one column. */
    for (; r0 + 8 <= rows; r0 += 8) {
        int64_t c0 = 0;
        for (; c0 + 8 <= cols; c0 += 8) {
            TILE a[8], b[8], e[8];
            for (int i = 0; i < 8; i++) a[i] = *(const TILE *)(src + (r0 + i) * ss + c0);
            for (int i = 0; i < 8; i += 2) {
                b[i] = SHUFFLE(a[i], a[i + 1], 0, 8, 2, 10, 4, 12, 6, 14);
                b[i + 1] = SHUFFLE(a[i], a[i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
            }
            for (int i = 0; i < 8; i += 4)
                for (int j = 0; j < 2; j++) {
                    e[i + j] = SHUFFLE(b[i + j], b[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
                    e[i + j + 2] = SHUFFLE(b[i + j], b[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
                }
            for (int j = 0; j < 4; j++) {
                T *column = dst + (c0 + j) * ds + r0;
                *(TILE *)column = SHUFFLE(e[j], e[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
                *(TILE *)(column + 4 * ds) = SHUFFLE(e[j], e[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
            }
        }
        for (int64_t r = r0; r < r0 + 8; r++)
            for (int64_t c = c0; c < cols; c++) dst[c * ds + r] = src[r * ss + c];
    }
#endif
    for (int64_t r = r0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[c * ds + r] = src[r * ss + c];
}
#undef TILE
