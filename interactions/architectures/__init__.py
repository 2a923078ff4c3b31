"""Architectures built from the expression nodes, one module each."""
from .attention import attention
from .convolution import convolution
from .gating import gating

__all__ = ["attention", "convolution", "gating"]
