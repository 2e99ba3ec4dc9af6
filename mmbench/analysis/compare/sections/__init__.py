"""The section builders of a comparison, one module per section kind: workload metrics,
durations, vmstat, monitors and the ratio summary.  Each takes the shared
:class:`~mmbench.analysis.compare.context.Context` and returns :class:`Section` objects."""
