"""What every command shares: the result store a ``--results`` value (or ``$MMBENCH_RESULTS``) names,
and the argument types of numbers (a whole number >= 1, a percentage >= 0)."""

from __future__ import annotations

import argparse
import math
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


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def percentage(text: str) -> float:
    """A percentage ≥ 0: nan, inf or a negative number would turn the regression gate off or on."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite percentage ≥ 0, got {text!r}")
    return value
