"""How a product or a whole expression runs: strategies, kernels, plans and the hand kernels.

`product` turns an algebra's structure into a `Kernel` for z = x * y on batched arrays; `bilinear` does the same
for any bilinear map given by (d1, d2, d3) tensors.  Each tensor factor is lowered on its own axis by one strategy
of the registry (`STRATEGIES`, one file each in `kernels.products.strategies`): ``identify`` (diagonal: a shared
index), ``gather`` (one nonzero per (i, j): index arithmetic and signs), ``fft`` (cyclic groups), ``graded`` (the
tensor algebra, level by level), ``codegen`` (generated numpy source with common subexpressions eliminated),
``compiled`` (one C loop over the nonzero terms, where a C compiler works), ``scatter`` (every term at once, in a
few calls) or ``dense`` (a contraction with the structure constants).  ``strategy="auto"`` takes the cheapest by the
cost model, for the batch and engine at hand; `Kernel.explain` shows the choice.  Expressions lower into a `Plan`
through `PlanBuilder`, which multiplies through the same registry.  The hand kernels are here too: `linear_scan`,
`selective_scan`, the masked `softmax`, `causal_convolution`.  `calibrate` measures a device's rates (a GPU's) for
auto to price by there.

This package is the public surface; the code lives in floors, each importing only the floors below it:
`kernels.native` (the C loops, their build and load, the memory guard), `kernels.arrays` (the engine contract and
the engines), `kernels.products` and `kernels.scans` (side by side) and `kernels.plans` (docs: architecture).

>>> import numpy as np
>>> from product_interactions import kernels
>>> from product_interactions.algebra import clifford, position, diagonal, tensor_product
>>> K = kernels.product(clifford(3, 0, 1))
>>> K.strategies_for(rows=4096)[0] in ("compiled", "codegen")     # the C loop; generated numpy without a compiler
True
>>> x = np.random.default_rng(0).standard_normal((1000, 16))
>>> np.allclose(K(x, x), np.einsum("bi,bj,ijk->bk", x, x, clifford(3, 0, 1).structure_constants()))
True
>>> kernels.product(tensor_product(position(64), diagonal(32))).strategies
('identify', 'identify')
>>> kernels.bilinear(np.ones((2, 3, 1)))(np.ones(2), np.ones(3))      # sum_ij x_i y_j
array([6.])
"""

from .arrays.calibrate import calibrate
from .arrays.masked_softmax import softmax
from .native.memory import MemoryLimitError, install
from .plans import Mask, Plan, PlanBuilder
from .products import STRATEGIES, Factor, Kernel, bilinear, product
from .scans import causal_convolution, linear_scan, selective_scan

install(__name__)          # kernels.MEMORY_LIMIT: read and set through kernels.native.memory
del install

__all__ = ["Factor", "Kernel", "Mask", "MemoryLimitError", "MEMORY_LIMIT", "Plan", "PlanBuilder", "STRATEGIES",
           "bilinear", "causal_convolution", "linear_scan", "product", "selective_scan", "softmax"]
