"""The products floor: a bilinear product lowered to numeric code.  A `Factor` is one factor's structure, the
strategies (`products.strategies`, one file each) lower it, `Cost` prices them on an engine's rates, `select`
chooses, `Kernel` runs the chosen program and `autodiff` differentiates it; `product` and `bilinear` build a kernel.
It imports the arrays and native floors only.
"""
from .entry import bilinear, product
from .factor import Factor
from .kernel import Kernel
from .strategies import STRATEGIES

__all__ = ["Factor", "Kernel", "STRATEGIES", "bilinear", "product"]
