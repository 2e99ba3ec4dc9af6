"""Workload plugins: one module each, C sources beside them; ``mmbench.plugins.workloads()`` finds them."""
