"""The driver: a ``RunRequest`` plus the kernels it names turned into stored runs (``run.py``: on this
machine or in a VM guest, one run, A/B kernel rounds, settings rounds, adaptive rounds; ``rounds.py``:
the round engine and ``measure``; ``jobs.py``: a request as a fleet job).  The commands and the
fleet call it; it sees no argparse."""
