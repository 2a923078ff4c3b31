"""The plans floor: a compiled expression as a backend-neutral `Plan` of steps, its `PlanBuilder` (whose values are
lazy contractions, `Value`; a step's output is a `Register`), masks and the fusion of attention's steps.  It is the
top floor: it imports products, scans, arrays and native.
"""
from .builder import PlanBuilder, Value
from .masks import Mask
from .plan import Plan, Register

__all__ = ["Mask", "Plan", "PlanBuilder", "Register", "Value"]
