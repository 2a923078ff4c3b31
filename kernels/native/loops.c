/* The compiled loops of kernels.native.clib, one translation unit: the sparse bilinear product of the `compiled`
   strategy (product.h), the Seq2Tens scan with its gradient (scan.h) and LS2T's rank-1 functionals with their
   gradient (low_rank.h), for float64 and float32, on a pool of threads or an OpenMP team (pool.h).  No user input
   enters this source.

   Templating is the preprocessor's alone: product.h, scan.h, low_rank.h and transpose.h are written for a number
   type T and included once per instance below.  The sizes come from kernels.native.csource as -D flags: ALIGNMENT (bytes the
   working buffers start on), PRODUCT_BYTES and SCAN_BYTES (bytes per vector), BLOCK_* and WIDE_* (rows per block
   of the product, by dtype) and LANES_* (paths per block of the scan), and BUILD_KEY (the string build_key
   returns). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define PASTE_(a, b) a##b
#define PASTE(a, b) PASTE_(a, b)

#include "pool.h"

/* Vectors (GCC and clang extensions) of PRODUCT_BYTES bytes for the product (vec_) and SCAN_BYTES for the scan
   (scan_), loaded from any address a number may have and read through pointers to the numbers (may_alias). */
typedef double vec_double __attribute__((vector_size(PRODUCT_BYTES), aligned(sizeof(double)), may_alias));
typedef float vec_float __attribute__((vector_size(PRODUCT_BYTES), aligned(sizeof(float)), may_alias));
typedef double scan_double __attribute__((vector_size(SCAN_BYTES), aligned(sizeof(double)), may_alias));
typedef float scan_float __attribute__((vector_size(SCAN_BYTES), aligned(sizeof(float)), may_alias));

/* Vector shuffles where the compiler has them (GCC 12 or later, clang): transpose.h tiles with them. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#endif
#endif

#define T double
#define SUFFIX float64
#define LANES LANES_FLOAT64
#include "transpose.h"
#define B BLOCK_FLOAT64
#define NAME PASTE(product_float64_, BLOCK_FLOAT64)
#include "product.h"
#undef B
#undef NAME
#define B WIDE_FLOAT64
#define NAME PASTE(product_float64_, WIDE_FLOAT64)
#include "product.h"
#undef B
#undef NAME
#include "scan.h"
#include "low_rank.h"
#undef T
#undef SUFFIX
#undef LANES

#define T float
#define SUFFIX float32
#define LANES LANES_FLOAT32
#include "transpose.h"
#define B BLOCK_FLOAT32
#define NAME PASTE(product_float32_, BLOCK_FLOAT32)
#include "product.h"
#undef B
#undef NAME
#define B WIDE_FLOAT32
#define NAME PASTE(product_float32_, WIDE_FLOAT32)
#include "product.h"
#undef B
#undef NAME
#include "scan.h"
#include "low_rank.h"
#undef T
#undef SUFFIX
#undef LANES

/* The key this library was built for: kernels.native.build compares it with the key of this source, its sizes, the
   compiler and the flags after loading, and sets aside a library built for anything else. */
const char *build_key(void) { return BUILD_KEY; }
