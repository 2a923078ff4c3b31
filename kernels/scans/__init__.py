"""The scans floor: recurrences along time, as hand kernels: linear and selective scans, the Seq2Tens recursions
and causal convolution.  It imports the arrays and native floors only (not products, its sibling).
"""
