"""Architectures built from the expression nodes, one module each."""
from .attention import attention
from .convolution import convolution
from .gating import gating
from .seq2tens import deep_ls2t, ls2t

__all__ = ["attention", "convolution", "deep_ls2t", "gating", "ls2t"]
