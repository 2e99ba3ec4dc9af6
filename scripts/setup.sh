#!/usr/bin/env bash
# Set up mmbench on a Debian machine (as root): Debian packages for the workloads and probes, then a
# virtual environment in .venv with mmbench and its Python dependencies.  Idempotent and quick
# when nothing changed.  Usage: scripts/setup.sh [--test]   (--test adds pytest and hypothesis)
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

# Debian packages: compiler for the C workloads, filesystem and loop tools (thpavail's vfat
# image, swap files), curl/tar/gzip for largecopy, postmark, stress-ng and fio (the stressng and
# fio workloads), perf for the perf-stat monitor, GNU time, sysstat's mpstat for the mpstat
# monitor, Chromium for the applaunch browser probe and the HTML report test, and kmod
# (modprobe: inside a VM guest the seed suites load vfat and zram, modules in Debian's kernels).
pkgs=(gcc libc6-dev make util-linux mount dosfstools e2fsprogs procps time postmark curl tar gzip
      stress-ng fio linux-perf sysstat python3-venv chromium kmod
      qemu-system-x86 busybox-static)   # kernels under test: QEMU (+ its virtiofsd), the guest's initramfs
# kernbench/thpchallenge: Debian's kernel source (/usr/src/linux-source-X.tar.xz) and its build
# dependencies; pgbench: Debian's PostgreSQL server and its pgbench.  linux-source is the
# distribution's default version (6.1 on bookworm: `--kernel source`, kernbench); linux-source-6.12
# (bookworm-security) is the newer LTS mmbench also builds and tests (`--kernel source:linux-source-6.12`).
pkgs+=(linux-source linux-source-6.12 bc bison flex libelf-dev libssl-dev xz-utils perl postgresql)
# kernels under test built from source (mmbench kernel build): GNU patch for patch series, git
# for git:PATH@REF sources, rsync for the patched builds' object tree (the compiler and the
# build dependencies are above)
pkgs+=(patch git rsync)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install: ${missing[*]}" >&2; exit 1
  fi
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

py=${PYTHON:-python3}
extras="[plot]"
[ $want_test = 1 ] && extras="[plot,test,fleet,lint]"
stamp=".venv/.mmbench-setup-$(cat pyproject.toml | sha256sum | cut -c1-12)$want_test"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($py --version)"
  $py -m venv .venv
fi
if [ ! -e "$stamp" ]; then
  echo "setup: installing mmbench$extras into .venv"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # Tests must run on the packages a user gets: install the user's set first, then refuse extras
  # that would move any of them to an older version (a test extra once pinned numpy<2 this way).
  if [ "$extras" != "[plot]" ]; then
    .venv/bin/python -m pip install -q -e ".[plot]" --config-settings editable_mode=compat 2>/dev/null \
      || .venv/bin/python -m pip install -q -e ".[plot]"
    report=$(mktemp)
    .venv/bin/python -m pip install -q --dry-run --report "$report" -e ".$extras"
    if ! .venv/bin/python scripts/no-downgrade.py "$report"; then
      rm -f "$report"; echo "setup: failed: the extras $extras would downgrade packages (see above)" >&2; exit 1
    fi
    rm -f "$report"
  fi
  # Editable, as a path entry (a .pth line naming this folder): setuptools' default editable mode
  # installs an import finder that every start of .venv's Python pays for (~24 ms).  Should a
  # future setuptools drop the "compat" mode, the default editable install still works.
  .venv/bin/python -m pip install -q -e ".$extras" --config-settings editable_mode=compat 2>/dev/null \
    || .venv/bin/python -m pip install -q -e ".$extras"
  rm -f .venv/.mmbench-setup-*
  touch "$stamp"
fi
# Byte-code for mmbench's own modules (pip compiles only what it copies, and an editable install
# copies nothing): without it, and where PYTHONDONTWRITEBYTECODE=1, every start compiles them
# again (a two-run compare: 0.11 s instead of 0.07 s).  Only changed files are compiled again.
.venv/bin/python -m compileall -q mmbench >/dev/null
echo "setup: done (mmbench is .venv/bin/mmbench)"
