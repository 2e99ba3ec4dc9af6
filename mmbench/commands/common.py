"""What every command shares: the result store a ``--results`` value (or ``$MMBENCH_RESULTS``) names."""

from __future__ import annotations

import argparse
import os

from mmbench.model.store import Store


def results_of(args: argparse.Namespace) -> str:
    return str(args.results or os.environ.get("MMBENCH_RESULTS") or "results")


def store_of(args: argparse.Namespace) -> Store:
    from mmbench.store import open_store
    return open_store(results_of(args))
