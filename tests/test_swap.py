"""Swap as a setting: zram and swap file appear in /proc/swaps and are gone after restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbench.errors import UsageError
from mmbench.run.journal import Journal
from mmbench.run.swap import active_swaps, setup_swap
from tests.conftest import needs_root

pytestmark = needs_root
ZSWAP = Path("/sys/module/zswap/parameters/enabled")


@pytest.fixture
def journal(tmp_path):
    j = Journal(tmp_path / "journal")
    j.acquire()
    yield j
    j.restore()
    j.release()


def test_zram_swap_set_up_and_restored(journal):
    zswap_before = ZSWAP.read_text() if ZSWAP.exists() else None
    desc = setup_swap(
        {"type": "zram", "size": "0.5x", "compressor": "lz4", "priority": 7, "zswap": False}, 256 << 20, journal
    )
    assert desc["device"] == "/dev/zram0" and desc["compressor"] == "lz4" and desc["size"] == 128 << 20
    assert "/dev/zram0" in active_swaps()
    with pytest.raises(UsageError, match="already in use"):
        setup_swap({"type": "zram", "size": "64M"}, 256 << 20, journal)
    assert journal.restore() == []
    assert "/dev/zram0" not in active_swaps()
    assert Path("/sys/block/zram0/disksize").read_text().strip() == "0"
    if zswap_before is not None:
        assert ZSWAP.read_text() == zswap_before


def test_swap_file_set_up_and_removed(journal, tmp_path):
    path = Path("/var/tmp") / f"mmbench-test-swapfile-{tmp_path.name}"
    desc = setup_swap({"type": "file", "size": "32M", "path": str(path)}, 256 << 20, journal)
    assert desc["device"] == str(path) and str(path) in active_swaps()
    assert journal.restore() == []
    assert str(path) not in active_swaps() and not path.exists()


def test_bad_specs_refused(journal):
    with pytest.raises(UsageError):
        setup_swap({"type": "zram", "size": "1x", "compressor": "nosuchalgo"}, 256 << 20, journal)
    with pytest.raises(UsageError):
        setup_swap({"type": "tape"}, 256 << 20, journal)
    assert journal.restore() == []
    assert "/dev/zram0" not in active_swaps()


def test_loader_spec_accepted(journal):
    # what the suite loader hands over: every key, None where unset, plus size_bytes
    spec = {
        "type": "zram",
        "size": "1x",
        "compressor": None,
        "path": None,
        "priority": None,
        "zswap": None,
        "zswap_compressor": None,
        "size_bytes": 64 << 20,
    }
    desc = setup_swap(spec, 64 << 20, journal)
    assert desc["size"] == 64 << 20 and "/dev/zram0" in active_swaps()
