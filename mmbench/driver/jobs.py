"""A ``RunRequest`` as a fleet job: ``job_entry`` packs it on the submitting machine with the files
it names (a suite file's text, the patch, series and ``--kconfig`` files' contents), and
``local_request`` writes them out on the agent and gives back the same request naming them there,
so the agent's ``mmbench run`` is exactly the one ``run`` would have been."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mmbench.model.request import KernelRequest, RunRequest


def job_entry(request: RunRequest) -> dict[str, Any]:
    """The job's description of one run: shipped suites by name, suite files by content; a setting
    key the suite or ``--set`` names outside its folder is refused here, before it is queued (an
    agent runs it as root)."""
    from mmbench.config.load import check_suite_setting_keys, find_suite, shipped_suites
    from mmbench.kbuild.resolve import pack_inputs

    path = find_suite(request.config)
    check_suite_setting_keys(request.config, list(request.sets))
    shipped = path in shipped_suites().values() and not Path(request.config).exists()
    req = request.replace(config=path.stem if shipped else str(path), results=None)
    return {
        "request": json.loads(req.to_json()),
        "text": None if shipped else path.read_text(),
        "kernel_build": pack_inputs(req.kernel) if req.kernel is not None else None,
    }


def local_request(entry: dict[str, Any], workdir: Path) -> RunRequest:
    """The agent's side: the entry's files written under ``workdir`` (one folder per entry), the
    request naming them, run with ``--force --quiet`` into the store the agent names."""
    from mmbench.kbuild.resolve import unpack_inputs

    workdir.mkdir(parents=True, exist_ok=True)
    if "request" in entry:
        req = RunRequest.from_dict(entry["request"])
    else:  # a job queued by an mmbench from before requests: its fields one by one
        req = RunRequest(
            config=entry["config"],
            name=entry["name"],
            sets=tuple(entry.get("set") or ()),
            iterations=entry.get("iterations"),
            kernel=KernelRequest(entry["kernel"]) if entry.get("kernel") else None,
        )
    if entry.get("text") is not None:
        path = workdir / f"{Path(req.config).stem or 'suite'}.toml"
        path.write_text(entry["text"])
        req = req.replace(config=str(path))
    if req.kernel is not None:
        req = req.replace(kernel=unpack_inputs(req.kernel, entry.get("kernel_build"), workdir))
    return req.replace(force=True, quiet=True, results=None)
