"""Copy runs between stores (``mmbench push``/``pull``) and join interleaved parts into one run.

A run travels as its files, exactly as a results folder holds them, so a comparison made from the
copy reads the same bytes as one made from the original.  A run is read back whole (its digests
checked) before its files leave its store, and the receiving store reads it back whole again
before it replaces anything; joined parts are documents changed here, sealed afresh by the store
that receives them (``reseal_documents``).
"""

from __future__ import annotations

import json
from typing import Any

from mmbench.model.store import Store, copy_runs, validate_run_name  # noqa: F401 (copy_runs re-exported for push/pull)


def join_interleaved(
    src: Store,
    parts: list[str],
    dst: Store,
    name: str,
    *,
    force: bool = False,
    status: str | None = None,
    arm: tuple[int, int] | None = None,
) -> None:
    """Make run ``name`` in ``dst`` from runs ``parts`` of ``src`` (one round each, in the order they
    ran): iterations are
    renumbered in run order, the first part's suite and fingerprint are kept, and every part's
    fingerprint is kept in ``fingerprint.json`` under ``rounds`` so drift stays visible."""
    files: dict[str, bytes] = {}
    next_index: dict[str, int] = {}
    rounds: list[dict[str, Any]] = []
    timings: list[dict[str, Any]] = []
    statuses = []
    for n, part in enumerate(parts):
        src.load_run(part)  # every part read back (its digests checked) before its files are joined
        part_files = dict(src.run_files(part))
        meta = json.loads(part_files["run.json"])
        statuses.append(meta.get("status"))
        if meta.get("vm_timing"):  # each round's guest boot: host wall time, per iteration too
            timings.append({"run": part, **meta["vm_timing"]})
        rounds.append(
            {
                "run": part,
                "created": meta.get("created"),
                "fingerprint": json.loads(part_files.get("fingerprint.json", b"{}")),
            }
        )
        renumber: dict[tuple[str, str], str] = {}
        for rel in sorted(part_files, key=_iteration_order):
            bits = rel.split("/")
            if len(bits) >= 3 and bits[1].startswith("iter-"):
                key = (bits[0], bits[1])
                if key not in renumber:
                    idx = next_index.get(bits[0], 0)
                    next_index[bits[0]] = idx + 1
                    renumber[key] = f"iter-{idx}"
                new_rel = "/".join([bits[0], renumber[key], *bits[2:]])
                data = part_files[rel]
                if bits[2:] == ["result.json"]:
                    d = json.loads(data)
                    d["index"] = int(renumber[key][5:])
                    d["path"] = f"{bits[0]}/{renumber[key]}"
                    # paths into the iteration's folder (a monitor's "dir") move with it: left as
                    # they were, every joined iteration read round 1's monitor files
                    d = _moved(d, f"{bits[0]}/{bits[1]}/", f"{bits[0]}/{renumber[key]}/")
                    data = json.dumps(d, indent=1).encode()
                files[new_rel] = data
            elif n == 0 or rel not in files:
                files[rel] = part_files[rel]
    meta = json.loads(files["run.json"])
    meta["name"] = name
    meta["status"] = status or ("complete" if all(s == "complete" for s in statuses) else "incomplete")
    meta["interleaved_from"] = parts
    if timings:
        meta["vm_timing_rounds"] = timings
    if arm is not None:
        meta["interleave"] = {"arm": arm[0], "arms": arm[1]}
    files["run.json"] = json.dumps(meta, indent=1).encode()
    fp = json.loads(files.get("fingerprint.json", b"{}"))
    fp["rounds"] = rounds
    files["fingerprint.json"] = json.dumps(fp, indent=1).encode()
    dst.put_run_files(name, sorted(files.items()), force=force)


def _moved(value: Any, old: str, new: str) -> Any:
    """``value`` with every string that starts with ``old`` (or equals it without the slash)
    starting with ``new`` instead, through dicts and lists."""
    if isinstance(value, str):
        if value.startswith(old):
            return new + value[len(old) :]
        return new[:-1] if value == old[:-1] else value
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    return value


def _iteration_order(rel: str) -> tuple:
    bits = rel.split("/")
    if len(bits) >= 2 and bits[1].startswith("iter-") and bits[1][5:].isdigit():
        return (bits[0], int(bits[1][5:]), rel)
    return (bits[0], -1, rel)
