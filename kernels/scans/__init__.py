"""The scans floor: recurrences along time, as hand kernels: linear and selective scans, the Seq2Tens recursions
(`seq2tens`: the scan of lifts, the low-rank functionals and the choice among their methods) and causal convolution.
It imports the arrays and native floors only (not products, its sibling).
"""
from . import seq2tens
from .convolution import causal_convolution
from .recurrence import linear_scan
from .selective_ssm import selective_scan, time_major

__all__ = ["causal_convolution", "linear_scan", "selective_scan", "seq2tens", "time_major"]
