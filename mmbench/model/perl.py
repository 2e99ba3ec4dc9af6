"""Perl's reading of text as a number, shared by the MMTests importer and the MMTests convention
of compare: MMTests' scripts do arithmetic on the strings they split from logs and reports."""

from __future__ import annotations

import re

_PERL_NUM = re.compile(r"\s*([+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))")


def perl_num(text: str | None) -> float:
    """A string as Perl uses it in arithmetic: its leading number, else 0 (undef is 0 too)."""
    if text is None:
        return 0.0
    m = _PERL_NUM.match(text)
    return float(m.group(1)) if m else 0.0
