"""Benchmark scripts: ratios against references measured in one run (not part of the test suite)."""
