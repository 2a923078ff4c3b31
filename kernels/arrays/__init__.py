"""The arrays floor: the `Engine` contract, the engines that run it on numpy (with autograd), torch and JAX, the
operations they share (contractions, pointwise maps, the masked softmax, prefix scans, axis bookkeeping) and the
one function that says which engine an array belongs to (`registry.owner`).  It imports only the native floor.
"""
