"""The plans floor: a compiled expression as a backend-neutral `Plan` of steps, its `PlanBuilder`, masks and the
fusion of attention's steps.  It is the top floor: it imports products, scans, arrays and native.
"""
