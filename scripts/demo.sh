#!/usr/bin/env bash
# Set up, then run the default suite (smoke) twice, THP always vs never, and print the comparison.
# The machine is left exactly as it was.  Results go to ./results (or $MMBENCH_RESULTS).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mm=.venv/bin/mmbench
$mm run --config smoke --force --set thp.enabled=always thp-always
$mm run --config smoke --force --set thp.enabled=never thp-never
$mm compare thp-always thp-never
