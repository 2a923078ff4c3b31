"""Architectures built from the expression nodes, one module each."""
from .attention import attention
from .convolution import convolution
from .dynamical import dynamical
from .gating import gating
from .mamba import mamba, selective_scan
from .se3_attention import se3_attention
from .seq2tens import deep_ls2t, ls2t
from .ssm import ssm
from .tfn import tfn

__all__ = ["attention", "convolution", "deep_ls2t", "dynamical", "gating", "ls2t", "mamba", "se3_attention", "selective_scan", "ssm", "tfn"]
