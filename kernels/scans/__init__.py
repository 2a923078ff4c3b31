"""The scans floor: recurrences along time, as hand kernels: linear and selective scans, the Seq2Tens recursions
(`seq2tens`: the scan of lifts and the choice among its methods; `low_rank`: LS2T's rank-1 functionals;
`checkpoints`: what their C loops' forward hands their gradient through autograd) and causal convolution.  It
imports the arrays and native floors only (not products, its sibling).
"""
from . import low_rank, seq2tens
from .convolution import causal_convolution
from .recurrence import linear_scan
from .selective_ssm import selective_scan, time_major

__all__ = ["causal_convolution", "linear_scan", "low_rank", "selective_scan", "seq2tens", "time_major"]
