"""What every command shares: the result store a ``--results`` value (or ``$MMBENCH_RESULTS``) names."""

from __future__ import annotations

import argparse
import os

from mmbench.model.store import Store


def results_of(args: argparse.Namespace) -> str:
    return results_at(args.results)


def results_at(results: str | None) -> str:
    """The store a ``--results`` value names: itself, else $MMBENCH_RESULTS, else ./results."""
    return str(results or os.environ.get("MMBENCH_RESULTS") or "results")


def store_of(args: argparse.Namespace) -> Store:
    return store_at(args.results)


def store_at(results: str | None) -> Store:
    from mmbench.store import open_store

    return open_store(results_at(results))
