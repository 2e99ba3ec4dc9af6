"""Build the comparison of several runs: sections → rows, with percentages, significance,
confidence intervals, outlier and exclusion notes (definitions in docs/statistics.md).

The first run is the baseline.  Exporters in ``mmbench/report/`` render a :class:`Comparison`
(``model.py``, the result model they read); ``Comparison.to_dict()`` is the ``mmbench-compare/1``
JSON shape.  ``builder.py`` drives one ``sections/`` module per section kind; ``selection.py``
decides which test decides which row; ``families.py`` the primary (outcome), mechanism and
exploratory families; ``verdict.py`` the one-line verdict per run; ``environment.py`` diffs the
runs' environments;
``regressions.py`` serves ``--fail-on-regression``.
"""

from mmbench.analysis.compare.builder import build_comparison
from mmbench.analysis.compare.environment import env_diff, flatten, unique_names, vm_notes
from mmbench.analysis.compare.model import SCHEMA, Better, Comparison, Deferred, Row, Section, SectionKind
from mmbench.analysis.compare.percent import PCT_BASE_NEG, PCT_BASE_ZERO, PCT_NO_BASE, PCT_NO_VALUE, pct_diff
from mmbench.analysis.compare.regressions import Regression, regressions


__all__ = [
    "SCHEMA",
    "Better",
    "Comparison",
    "Deferred",
    "PCT_BASE_NEG",
    "PCT_BASE_ZERO",
    "PCT_NO_BASE",
    "PCT_NO_VALUE",
    "Regression",
    "Row",
    "Section",
    "SectionKind",
    "build_comparison",
    "env_diff",
    "flatten",
    "pct_diff",
    "regressions",
    "unique_names",
    "vm_notes",
]
