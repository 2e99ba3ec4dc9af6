"""The runner: journal and restore, settings, the memory sandbox, swap, and each workload iteration."""
