"""numpy, imported when first used rather than when a module that may use it is imported.

Every monitor module imports numpy for its parsers and summaries, and ``compare`` loads every
monitor class to read their cached summaries, which need no numpy at all: importing it anyway
costs 0.06-0.11 s of a 0.25 s compare.  ``from mmbench.model.lazy import numpy as np`` gives a stand-in
whose attributes are numpy's, imported on the first attribute read.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """A module imported on its first attribute access (then served from ``sys.modules``)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


numpy: Any = LazyModule("numpy")
