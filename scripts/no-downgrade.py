#!/usr/bin/env python3
"""Exit 1, naming each package, when a pip install report (``pip install --dry-run --report``)
would replace an installed distribution with an older version; used by scripts/setup.sh so test
and fleet extras can never silently pin the packages a user install gets (numpy 2 -> 1.26 once).

Usage: scripts/no-downgrade.py REPORT.json"""

import json
import sys
from importlib import metadata


def _key(version: str) -> object:
    try:
        from packaging.version import Version  # with matplotlib; the fallback reads releases only

        return Version(version)
    except Exception:
        pass
    out = []  # "2.4.6" -> (2, 4, 6)
    for part in version.split("+")[0].split("."):
        digits = "".join(c for c in part if c.isdigit()) if part[:1].isdigit() else ""
        out.append(int(digits) if digits else -1)
        if digits != part:
            break
    return tuple(out)


def main(report_path: str) -> int:
    with open(report_path) as fh:
        report = json.load(fh)
    installed = {d.metadata["Name"].lower().replace("_", "-"): d.version for d in metadata.distributions()}
    bad = []
    for item in report.get("install", []):
        name = item["metadata"]["name"].lower().replace("_", "-")
        new, old = item["metadata"]["version"], installed.get(name)
        if old is not None and _key(new) < _key(old):
            bad.append(f"{name} {old} -> {new}")
    for line in bad:
        print(f"setup: downgrade refused: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
