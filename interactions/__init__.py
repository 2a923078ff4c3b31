"""Product interactions: the expression language, architectures and experiments (built on `algebra`, `kernels`)."""
