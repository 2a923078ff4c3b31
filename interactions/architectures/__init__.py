"""Architectures built from the expression nodes, one module each."""
from ._attention import attention
from ._convolution import convolution
from ._dynamical import dynamical, dynamical_block
from ._expression_model import ExpressionModel, expression_model
from ._gating import gating
from ._mamba import mamba, selective_scan
from ._product_layer import ProductLayer, product_layer
from ._se3_attention import se3_attention
from .seq2tens import deep_ls2t, ls2t
from ._ssm import ssm
from ._tfn import tfn

__all__ = ["ExpressionModel", "ProductLayer", "attention", "convolution", "deep_ls2t", "dynamical", "dynamical_block",
           "expression_model", "gating", "ls2t", "mamba", "product_layer", "se3_attention", "selective_scan", "ssm",
           "tfn"]
