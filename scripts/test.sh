#!/usr/bin/env bash
# Set up (with test dependencies), then run the whole test suite.  Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
# Journal restore first, in case an earlier run was killed: tests start from a clean machine.
.venv/bin/mmbench restore >/dev/null 2>&1 || true
exec .venv/bin/python -m pytest -q "$@"
