"""The independent blocks of a linear system: unknowns that share no equation, directly or through others.

Equivariance constraints decouple: a translation couples only the unknowns of one orbit (bilinear maps on 32
points: 1,024 blocks of 32 unknowns instead of one system of 32,768), a rotation only those of one path
(l1, l2, l).  Solving each block apart gives the same solution space, and for the exact path the same reduced
basis, at a fraction of the cost.

>>> import scipy.sparse
>>> pattern = scipy.sparse.csr_array(([1., -1., 1., -1.], ([0, 0, 1, 1], [0, 2, 1, 3])), shape=(2, 5))
>>> [(b.unknowns.tolist(), b.equations.tolist()) for b in blocks(pattern)]
[([0, 2], [0]), ([1, 3], [1]), ([4], [])]
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse


class Block(NamedTuple):
    """Sorted indices of a block's unknowns (columns) and of its equations (rows)."""

    unknowns: np.ndarray
    equations: np.ndarray


def blocks(pattern: scipy.sparse.sparray | scipy.sparse.spmatrix) -> list[Block]:
    """The connected blocks of a scipy sparse (equations, unknowns) matrix, ordered by their first unknown.

    An unknown in no equation is a block of its own, with no equations (it is free)."""
    import scipy.sparse
    import scipy.sparse.csgraph

    pattern = scipy.sparse.coo_array(pattern)
    equations, unknowns = pattern.shape
    # The bipartite graph: vertices 0..unknowns-1 are unknowns, the rest equations.
    edges = scipy.sparse.coo_array((np.ones(pattern.nnz, dtype=np.int8), (pattern.col, unknowns + pattern.row)),
                                   shape=(unknowns + equations,) * 2)
    _, labels = scipy.sparse.csgraph.connected_components(edges, directed=False)
    order = np.argsort(labels, kind="stable")          # vertices grouped by block, ascending inside each
    starts = np.flatnonzero(np.diff(labels[order], prepend=-1))
    found = []
    for members in np.split(order, starts[1:]):
        block_unknowns = members[members < unknowns]
        if len(block_unknowns):                          # a block of equations alone is an empty row: skip it
            found.append(Block(block_unknowns, members[members >= unknowns] - unknowns))
    return sorted(found, key=lambda block: block.unknowns[0])
