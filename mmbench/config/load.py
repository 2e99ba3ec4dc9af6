"""Load a suite: TOML → ``--set`` overrides → schema → plugins and sizes resolved.

Every error is a ``UsageError`` whose one line names the file, the key's path and what was
expected.  ``--set KEY=VALUE`` edits the raw document before validation, so an override is
checked exactly like the file.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from mmbench.model.params import close_match, resolve_params
from mmbench.config.schema import Actions, SuiteFile, SuiteMeta, SwapSpec, VmSpec, WorkloadSpec
from mmbench.model import quirks
from mmbench.model.sizes import parse_duration, parse_size
from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.model.guest import in_guest
from mmbench.model.kernel import meminfo_bytes
from mmbench.model.results import MetricDef, flatten
from mmbench.model.userfile import read_user_file

if TYPE_CHECKING:  # the plugins themselves come from mmbench.plugins at run time
    from mmbench.monitors.base import Monitor
    from mmbench.workloads.base import Workload

SUITE_KEYS = set(SuiteMeta.model_fields)
SETTING_NAMESPACES = set(quirks.SETTING_NAMESPACES)
# `vm.KEY` for these keys is the [vm] table (the guest), not a vm.* sysctl (no sysctl has these names).
VM_KEYS = set(VmSpec.model_fields)


@dataclass
class ResolvedWorkload:
    label: str
    plugin: str
    workload: Workload
    params: dict[str, Any]
    metrics: list[MetricDef]
    iterations: int
    warmup: int
    companions: list[tuple[Workload, dict[str, Any]]] = field(default_factory=list)
    timeout: float | None = None  # seconds per iteration (suite.timeout or the workload's own)


@dataclass
class ResolvedMonitor:
    name: str
    cls: type[Monitor]
    interval: float
    params: dict[str, Any]


@dataclass
class Suite:
    path: Path
    text: str  # the file as written
    effective: dict[str, Any]  # the document after --set, as run
    hash: str
    description: str
    budget: int
    sandbox: str  # resolved: "memcg" or "none" (whole machine)
    aims: list[str]
    notes: list[str]  # things the run should say before it starts (budget ignored, ...)
    scratch: Path
    settings: dict[str, Any]
    actions: dict[str, Any]
    swap: dict[str, Any]
    workloads: list[ResolvedWorkload]
    monitors: list[ResolvedMonitor]
    headline: list[str] = field(default_factory=list)
    vm: dict[str, Any] = field(default_factory=dict)
    primary: list[str] = field(default_factory=list)  # [suite] primary (outcomes), or the default
    primary_declared: bool = False  # False: primary is the default
    mechanisms: list[str] = field(default_factory=list)  # [suite] mechanisms, or the aims' default
    mechanisms_declared: bool = False


def shipped_suites() -> dict[str, Path]:
    """Shipped suites by name: ``configs/*.toml`` and the seed suites in ``configs/seeds/``."""
    root = resources.files("mmbench") / "configs"
    out = {p.name[:-5]: Path(str(p)) for p in root.iterdir() if p.name.endswith(".toml")}
    seeds = root / "seeds"
    if seeds.is_dir():
        out.update({p.name[:-5]: Path(str(p)) for p in seeds.iterdir() if p.name.endswith(".toml")})
    return out


def find_suite(spec: str) -> Path:
    """A path, or the name of a suite shipped with mmbench ("smoke" or "smoke.toml")."""
    p = Path(spec)
    if p.is_file():
        return p
    shipped = shipped_suites()
    name = p.name[:-5] if p.name.endswith(".toml") else p.name
    if name in shipped and (len(p.parts) == 1 or p.parent.name in ("configs", "seeds")):
        return shipped[name]
    raise UsageError(
        f"--config {spec}: no such file and no shipped suite of that name"
        f"{close_match(name, list(shipped))}; shipped: {', '.join(sorted(shipped))}"
    )


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(doc: dict[str, Any], item: str) -> None:
    """Apply one ``--set KEY=VALUE`` to the raw suite document."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    parts = key.split(".")
    if parts[0] == "monitors" and len(parts) == 2 and (not sep or raw.strip() in ("true", "false")):
        # --set monitors.NAME adds a monitor, --set monitors.NAME=false removes it
        monitors = doc.setdefault("monitors", {})
        if raw.strip() == "false":
            monitors.pop(parts[1], None)
        else:
            monitors.setdefault(parts[1], {})
        return
    if not sep or not key:
        raise UsageError(f"--set {item}: expected KEY=VALUE (e.g. thp.enabled=never, iterations=5)")
    value = _parse_value(raw.strip())
    head = parts[0]
    if head == "vm" and len(parts) == 2 and parts[1] in VM_KEYS:
        doc.setdefault("vm", {})[parts[1]] = value
    elif key in SUITE_KEYS:
        doc.setdefault("suite", {})[key] = value
    elif head == "suite" and len(parts) == 2:
        doc.setdefault("suite", {})[parts[1]] = value
    elif head in SETTING_NAMESPACES:
        doc.setdefault("settings", {})[key] = value
    elif head == "settings" and len(parts) >= 3:
        doc.setdefault("settings", {})[".".join(parts[1:])] = value
    elif head in ("actions", "swap") and len(parts) == 2:
        doc.setdefault(head, {})[parts[1]] = value
    elif head == "monitors" and len(parts) >= 3:
        doc.setdefault("monitors", {}).setdefault(parts[1], {})[".".join(parts[2:])] = value
    else:
        if head == "workload":
            parts = parts[1:]
        if len(parts) < 2:
            raise UsageError(
                f"--set {key}: expected LABEL.PARAM (e.g. faultin.size=1G), a setting "
                f"(vm.*, thp.*), a suite key ({', '.join(sorted(SUITE_KEYS))}), "
                f"actions.*, swap.* or monitors.NAME.*"
            )
        workloads = doc.get("workload", [])
        matches = [w for w in workloads if w.get("label", w.get("name")) == parts[0]] or [
            w for w in workloads if w.get("name") == parts[0]
        ]
        if not matches:
            labels = [w.get("label", w.get("name")) for w in workloads]
            raise UsageError(
                f"--set {key}: the suite has no workload {parts[0]!r}{close_match(parts[0], labels)}"
                f" (workloads: {', '.join(map(str, labels)) or 'none'})"
            )
        if len(matches) > 1:
            raise UsageError(f"--set {key}: {parts[0]!r} names {len(matches)} workloads; use their label")
        w = matches[0]
        if parts[1] in ("iterations", "warmup", "label", "timeout") and len(parts) == 2:
            w[parts[1]] = value
        elif parts[1] == "with" and len(parts) == 4:
            w.setdefault("with", {}).setdefault(parts[2], {})[parts[3]] = value
        else:
            if parts[1] == "params":
                parts = parts[1:]
            w.setdefault("params", {})[".".join(parts[1:])] = value


# A setting key is dot-separated names, each one file or folder name under its namespace's sysfs
# or procfs folder (``thp.khugepaged.defrag``, ``vm.page-cluster``, ``thp.hugepages-2048kB.enabled``).
# The key becomes a path, and a suite may come from a queue whose agent runs it as root: an empty
# part, ``..``, ``/`` or anything else that could step out of that folder is refused here.
_SETTING_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def setting_key_problem(key: str) -> str | None:
    """Why ``key`` cannot name a setting file inside its namespace's folder (None: it can)."""
    ns, _, rest = key.partition(".")
    if ns not in SETTING_NAMESPACES or not rest:
        return None  # not a knob path at all: the runner's own check names the namespaces
    bad = next((part for part in rest.split(".") if not _SETTING_PART.fullmatch(part)), None)
    if bad is None:
        return None
    what = f"{bad!r} is not a plain name" if bad else "it has an empty part (two dots in a row)"
    return (
        f"not a setting name: {what} (each part is letters, digits, '_' or '-'); a setting never names "
        f"a path outside {quirks.SETTING_NAMESPACES[ns][0]}"
    )


def check_setting_keys(doc: dict[str, Any], where: Path | str) -> None:
    """Every key of the document's [settings] (after ``--set``) resolves inside its own folder."""
    settings = doc.get("settings")
    if not isinstance(settings, dict):
        return
    for key in settings:
        problem = setting_key_problem(str(key))
        if problem:
            raise UsageError(f"{where}: settings.{key}: {problem}")


def check_suite_setting_keys(spec: str, overrides: list[str] | None = None) -> None:
    """The setting-key check of a suite and its ``--set`` values alone, where the suite is not
    loaded on this machine (``mmbench submit``: refused before a job is queued)."""
    path = find_suite(spec)
    _suite_doc(path, _read_suite_text(path), overrides)


def _suite_doc(path: Path, text: str, overrides: list[str] | None) -> dict[str, Any]:
    """The suite file's TOML with its settings flattened, the ``--set`` values applied and every
    settings key checked (one-line errors naming the file)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise UsageError(f"{path}: not valid TOML: nested too deeply") from None
    # TOML dotted keys under [settings] nest (thp.enabled → {"thp": {"enabled": ...}}): flatten.
    if isinstance(doc.get("settings"), dict):
        doc["settings"] = flatten(doc["settings"])
    for item in overrides or []:
        apply_override(doc, item)
    check_setting_keys(doc, path)
    return doc


def _loc(loc: tuple[Any, ...], doc: dict[str, Any]) -> str:
    out: list[str] = []
    for i, part in enumerate(loc):
        if isinstance(part, int) and out and out[-1] == "workload":
            wl = doc.get("workload", [])
            name = wl[part].get("label", wl[part].get("name", part)) if part < len(wl) else part
            out[-1] = f"workload[{name}]"
        else:
            out.append("with" if part == "with_" else str(part))
    return ".".join(out)


def _schema_error(path: Path, e: ValidationError, doc: dict[str, Any]) -> UsageError:
    err = e.errors()[0]
    where = _loc(err["loc"], doc)
    if err["type"] == "extra_forbidden":
        section = err["loc"][:-1]
        known = {
            (): ["suite", "settings", "actions", "swap", "workload", "monitors"],
            ("suite",): sorted(SUITE_KEYS),
            ("actions",): list(Actions.model_fields),
            ("swap",): list(SwapSpec.model_fields),
        }.get(
            tuple(s for s in section if not isinstance(s, int)),
            [f.alias or n for n, f in WorkloadSpec.model_fields.items()],
        )
        return UsageError(
            f"{path}: {where}: unknown key{close_match(str(err['loc'][-1]), known)}; "
            f"expected one of: {', '.join(known)}"
        )
    return UsageError(f"{path}: {where}: {err['msg']} (got {err.get('input')!r})")


def _read_suite_text(path: Path) -> str:
    """The suite file as text; a directory, binary or non-UTF-8 file or an empty one is one line."""
    raw = read_user_file(path, "--config", "a TOML suite")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise UsageError(f"{path}: line {line}: not UTF-8 text (a TOML suite is UTF-8)") from None
    if not text.strip() or all(not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines()):
        raise UsageError(f"{path}: empty suite (expected [suite] and at least one [[workload]])")
    return text


def _check_resident(cls: type[Workload], params: dict[str, Any], budget: int, swap: bool, where: str) -> None:
    """Anonymous memory above the budget could only be OOM-killed: refused before anything runs."""
    from mmbench.model.sizes import format_size

    for name in cls.resident:
        value = params.get(name)
        if isinstance(value, int) and value > budget and not swap:
            raise UsageError(
                f"{where}.{name}: {format_size(value)} is more than the memory budget "
                f"({format_size(budget)}); it cannot fit in the sandbox (lower it, raise "
                f"suite.budget, or configure [swap])"
            )


def _check_label(label: str, where: str) -> None:
    """A label is the workload's folder in the run: a name, never a path."""
    from mmbench.model.names import name_problem

    problem = name_problem(label)
    if problem:
        raise UsageError(f"{where}: {problem}")


def _timeout(value: str | float | int, where: str) -> float:
    """Per-iteration timeout in seconds: a duration ("90s", "2h") or a number of seconds."""
    try:
        seconds = parse_duration(value)
    except (ValueError, TypeError) as e:
        raise UsageError(f"{where}: {e}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise UsageError(f"{where}: must be a positive duration, got {value!r}")
    return float(seconds)


def _check_requires(cls: type[Workload], where: str) -> None:
    missing = [tool for tool in cls.requires if shutil.which(tool) is None]
    if missing:
        pkgs = sorted({cls.packages[tool] for tool in missing if tool in cls.packages})
        hint = f": install Debian's {', '.join(pkgs)}" if pkgs else ""
        raise EnvironmentUnsupported(
            f"{where}: workload {cls.name} needs {', '.join(missing)} on PATH{hint} "
            f"(scripts/setup.sh installs what mmbench uses)"
        )


def resolve_mode(requested: str) -> str:
    """``auto`` → ``none`` inside an mmbench VM guest, ``memcg`` on a host."""
    if requested == "auto":
        return "none" if in_guest() else "memcg"
    return requested


def _checked(workload: Workload, params: dict[str, Any], budget: int, where: str) -> None:
    """The workload's own parameter checks, their errors prefixed with the suite file."""
    try:
        workload.check(params, budget)
    except UsageError as e:
        raise UsageError(f"{where}: {e}" if not str(e).startswith(where) else str(e)) from None


def memtotal() -> int:
    return meminfo_bytes("MemTotal")


def load_suite(spec: str, overrides: list[str] | None = None, iterations: int | None = None) -> Suite:
    from mmbench.plugins import monitors as monitor_registry
    from mmbench.plugins import workloads as workload_registry

    path = find_suite(spec)
    text = _read_suite_text(path)
    doc = _suite_doc(path, text, overrides)
    if iterations is not None:
        doc.setdefault("suite", {})["iterations"] = iterations
    try:
        sf = SuiteFile.model_validate(doc)
    except ValidationError as e:
        raise _schema_error(path, e, doc) from None
    where = str(path)
    if not sf.workload:
        raise UsageError(
            f"{where}: no workloads: add a [[workload]] table with a name "
            f'(a suite that only records monitors uses name = "idle")'
        )

    mode = resolve_mode(sf.suite.sandbox)
    notes: list[str] = []
    try:
        total = memtotal()
        budget = parse_size(sf.suite.budget, total) if sf.suite.budget is not None else total
    except ValueError as e:
        raise UsageError(f"{where}: suite.budget: {e}") from None
    if mode == "none":
        # Whole-machine mode: the budget is the machine.  A suite written for a memcg (budget =
        # "1G") still runs, its relative sizes scaled to MemTotal; say so rather than guess.
        if sf.suite.budget is not None and budget != total:
            notes.append(
                f"whole-machine mode (sandbox = none): budget is MemTotal ({total >> 20} MiB); "
                f'the suite\'s budget {sf.suite.budget!r} applies only with sandbox = "memcg"'
            )
        budget = total
    if budget < (16 << 20):
        raise UsageError(f"{where}: suite.budget: {budget} bytes is too small (minimum 16M)")
    if budget > total:
        raise UsageError(
            f"{where}: suite.budget: {sf.suite.budget} is more than this machine's MemTotal ({total >> 20} MiB)"
        )

    # Settings are checked against the running kernel by the runner (and `run --check`) before
    # any is applied: loading a suite reads no sysfs knob and needs no root, and under --kernel
    # the guest's kernel decides.

    wreg = workload_registry()
    workloads: list[ResolvedWorkload] = []
    labels: set[str] = set()
    for spec_w in sf.workload:
        if spec_w.name not in wreg:
            raise UsageError(
                f"{where}: workload[{spec_w.name}].name: unknown workload "
                f"{spec_w.name!r}{close_match(spec_w.name, list(wreg))}; known: {', '.join(wreg)}"
            )
        label = spec_w.label or spec_w.name
        if label in labels:
            raise UsageError(
                f'{where}: workload[{label}]: two workloads share the label {label!r}; give one a label = "..."'
            )
        _check_label(label, f"{where}: workload[{label}].label")
        labels.add(label)
        cls = wreg[spec_w.name]
        _check_requires(cls, f"{where}: workload[{label}]")
        wl = cls()
        params = resolve_params(cls.params, spec_w.params, budget, f"{where}: workload[{label}].params")
        _check_resident(cls, params, budget, sf.swap.type != "none", f"{where}: workload[{label}].params")
        _checked(wl, params, budget, where)
        companions = []
        for cname, cparams in spec_w.with_.items():
            if cname not in wreg or not wreg[cname].companion:
                options = [n for n, c in wreg.items() if c.companion]
                raise UsageError(
                    f"{where}: workload[{label}].with.{cname}: not a companion workload"
                    f"{close_match(cname, options)}; companions: {', '.join(options) or 'none'}"
                )
            ccls = wreg[cname]
            _check_requires(ccls, f"{where}: workload[{label}].with.{cname}")
            cw = ccls()
            cp = resolve_params(ccls.params, cparams, budget, f"{where}: workload[{label}].with.{cname}")
            _checked(cw, cp, budget, where)
            companions.append((cw, cp))
        metrics = wl.metric_defs(params) + [m for cw, cp in companions for m in cw.metric_defs(cp)]
        workloads.append(
            ResolvedWorkload(
                label=label,
                plugin=spec_w.name,
                workload=wl,
                params=params,
                metrics=metrics,
                iterations=spec_w.iterations or sf.suite.iterations,
                warmup=spec_w.warmup if spec_w.warmup is not None else sf.suite.warmup,
                companions=companions,
                timeout=_timeout(
                    spec_w.timeout if spec_w.timeout is not None else sf.suite.timeout,
                    f"{where}: " + (f"workload[{label}].timeout" if spec_w.timeout is not None else "suite.timeout"),
                ),
            )
        )

    mreg = monitor_registry()
    monitors: list[ResolvedMonitor] = []
    for mname, mconf in sf.monitors.items():
        if mname not in mreg:
            raise UsageError(
                f"{where}: monitors.{mname}: unknown monitor{close_match(mname, list(mreg))}; "
                f"known: {', '.join(mreg) or 'none'}"
            )
        mcls = mreg[mname]
        conf = dict(mconf)
        try:
            interval = parse_duration(conf.pop("interval", mcls.default_interval))
        except ValueError as e:
            raise UsageError(f"{where}: monitors.{mname}.interval: {e}") from None
        if interval <= 0:
            raise UsageError(f"{where}: monitors.{mname}.interval: must be positive")
        mparams = resolve_params(mcls.params, conf, budget, f"{where}: monitors.{mname}")
        monitors.append(ResolvedMonitor(mname, mcls, interval, mparams))

    swap = sf.swap.model_dump()
    try:
        swap["size_bytes"] = parse_size(swap["size"], budget)
    except ValueError as e:
        raise UsageError(f"{where}: swap.size: {e}") from None

    effective = sf.model_dump(by_alias=True, exclude_none=True)
    # scratch is made absolute here, like the results directory in store.open_store: workloads
    # hand paths under it to tools that run in other working directories
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return Suite(
        path=path,
        text=text,
        effective=effective,
        hash=digest,
        description=sf.suite.description,
        budget=budget,
        sandbox=mode,
        aims=list(sf.suite.aims),
        notes=notes,
        scratch=Path(sf.suite.scratch).absolute(),
        settings=dict(sf.settings),
        actions=sf.actions.model_dump(),
        swap=swap,
        workloads=workloads,
        monitors=monitors,
        headline=_check_headline(sf.suite.headline, workloads, where),
        vm=_vm_options(sf, where),
        **_families(sf, effective, workloads, monitors, mreg, notes, where),
    )


def _vm_options(sf: SuiteFile, where: str) -> dict[str, Any]:
    """The [vm] table with sizes and durations resolved (memory in MiB, disk in GiB, timeout in s)."""
    vm = sf.vm.model_dump()
    try:
        vm["memory_mb"] = parse_size(vm["memory"], None) >> 20
        vm["disk_gb"] = max(1, parse_size(vm["disk"], None) >> 30)
        vm["timeout_s"] = parse_duration(vm["timeout"])
        vm["below_4g_mb"] = parse_size(vm["max_ram_below_4g"], None) >> 20 if vm["max_ram_below_4g"] else None
    except (ValueError, TypeError) as e:
        raise UsageError(f"{where}: vm: {e}") from None
    if vm["memory_mb"] < 128:
        raise UsageError(f"{where}: vm.memory: {vm['memory']} is too small for a guest (minimum 128M)")
    if vm["below_4g_mb"] is not None and not 64 <= vm["below_4g_mb"] < min(vm["memory_mb"], 3584):
        raise UsageError(
            f"{where}: vm.max_ram_below_4g: {vm['max_ram_below_4g']} must be at least 64M and less "
            f"than the guest's memory ({vm['memory']}) and 3.5G, or there is no memory above 4 GiB"
        )
    if vm["numa"] > 1 and vm["memory_mb"] // vm["numa"] < 64:
        raise UsageError(
            f"{where}: vm.numa: {vm['numa']} nodes of {vm['memory_mb'] // vm['numa']} MiB each "
            f"is too small (give vm.memory at least 64M per node)"
        )
    return vm


def _families(
    sf: SuiteFile,
    effective: dict[str, Any],
    workloads: list[ResolvedWorkload],
    monitors: list[ResolvedMonitor],
    mreg: dict[str, Any],
    notes: list[str],
    where: str,
) -> dict[str, Any]:
    """``[suite] primary`` and ``[suite] mechanisms`` checked against the rows this suite can
    produce (else the defaults of ``config/primary.default_families``); the resolved lists are
    stored with the run (suite-effective.json).  Each entry must name exactly one row (a vmstat row
    in a suite of two workloads is two rows: the entry needs a workload label), at most
    ``MAX_PRIMARY`` rows a family, and no row in both families.  A row of a known monitor the suite
    does not run (``--set monitors.mm-trace=false``) is a note: the report will say it is missing."""
    from mmbench.config import primary as pr

    for field_name, declared in (("primary", sf.suite.primary), ("mechanisms", sf.suite.mechanisms)):
        if len(declared) > pr.MAX_PRIMARY:
            raise UsageError(
                f"{where}: suite.{field_name}: {len(declared)} rows; at most {pr.MAX_PRIMARY} (a family "
                f"of more has too little power at a few iterations: leave the others exploratory)"
            )
    heads = [(w.label, h) for h in sf.suite.headline for w in workloads if any(m.name == h for m in w.metrics)] or [
        (w.label, w.metrics[0].name) for w in workloads if w.metrics
    ]
    primary, mechanisms = pr.default_families(
        list(sf.suite.aims), heads, [w.label for w in workloads], list(sf.suite.primary), list(sf.suite.mechanisms)
    )
    rows = suite_rows(workloads, monitors, mreg)
    found: dict[str, dict[str, str]] = {}
    for field_name, names, declared in (
        ("primary", primary, bool(sf.suite.primary)),
        ("mechanisms", mechanisms, bool(sf.suite.mechanisms)),
    ):
        got: dict[str, str] = {}
        for i, text in enumerate(names):
            where_i = f"{where}: suite.{field_name}[{i}] {text!r}"
            if not declared:
                where_i += f" (the default for aims {', '.join(sf.suite.aims) or 'none'})"
            hits, note = match_entry(text, rows, where_i)
            if note:
                notes.append(f"suite.{field_name}[{i}] {text!r}: {note}")
            if len(hits) > 1:
                raise UsageError(
                    f"{where_i}: matches {len(hits)} rows ({'; '.join(hits)}): name one with its "
                    f"workload label as section, e.g. {_labelled(text, hits[0])!r}"
                )
            for h in hits:
                got[h] = text
        if len(got) > pr.MAX_PRIMARY:
            raise UsageError(
                f"{where}: suite.{field_name}: {len(got)} rows; at most {pr.MAX_PRIMARY} (a family of "
                f"more has too little power at a few iterations: leave the others exploratory)"
            )
        found[field_name] = got
    both = sorted(set(found["primary"]) & set(found["mechanisms"]))
    if both:
        raise UsageError(
            f"{where}: {both[0]} is in suite.primary ({found['primary'][both[0]]!r}) and in "
            f"suite.mechanisms ({found['mechanisms'][both[0]]!r}): a row is an outcome or a "
            f"mechanism, not both"
        )
    eff = effective.setdefault("suite", {})
    eff["primary"] = list(primary)
    eff["mechanisms"] = list(mechanisms)
    return {
        "primary": list(primary),
        "primary_declared": bool(sf.suite.primary),
        "mechanisms": list(mechanisms),
        "mechanisms_declared": bool(sf.suite.mechanisms),
    }


@dataclass(frozen=True)
class SuiteRows:
    """The rows a suite can produce, as an entry of ``[suite] primary`` matches them."""

    workloads: list[tuple[str, str, list[MetricDef]]]  # label, plugin, metrics
    monitors: dict[str, tuple[str, ...]]  # monitors it runs: their row patterns
    absent: dict[str, tuple[str, ...]]  # known monitors it does not run


def suite_rows(workloads: list[ResolvedWorkload], monitors: list[ResolvedMonitor], mreg: dict[str, Any]) -> SuiteRows:
    mons = {m.name.lower(): m.cls.row_patterns for m in monitors}
    return SuiteRows(
        [(w.label.lower(), w.plugin.lower(), list(w.metrics)) for w in workloads],
        mons,
        {n.lower(): c.row_patterns for n, c in mreg.items() if n.lower() not in mons},
    )


def match_entry(text: str, rows: SuiteRows, where: str) -> tuple[list[str], str | None]:
    """The rows ``text`` names (as "NAME (section title)"), and a note for a row of a monitor the
    suite does not run; a name that is no row of the suite, or a statistic the row lacks, is a
    UsageError naming the entry."""
    from mmbench.config import primary as pr

    sections = (
        {"vmstat", "duration", "workload", "monitor"}
        | {k for lab, plug, _ in rows.workloads for k in (lab, plug)}
        | set(rows.monitors)
        | set(rows.absent)
    )
    e = pr.parse_entry(text, sections)
    if not e.name:
        raise UsageError(f"{where}: empty row name")
    hits: list[str] = []
    vm_names = {n.lower(): n for n in pr.VMSTAT_ROWS}
    dur_names = {n.lower(): n for n in pr.DURATION_ROWS}

    def here(*names: str) -> bool:
        return all(x in names for x in e.sections)

    for label, plugin, mds in rows.workloads:
        if e.name in vm_names and here("vmstat", label, plugin):
            if e.stat not in (None, "mean"):
                _bad_stat(where, "a vmstat row has only its mean row")
            hits.append(f"{vm_names[e.name]} (vmstat: {label})")
        if e.name in dur_names and here("duration", label, plugin):
            if e.stat not in (None, "mean"):
                _bad_stat(where, "a duration row has only its mean row")
            hits.append(f"{dur_names[e.name]} (duration: {label})")
        if here("workload", label, plugin):
            for md in mds:
                if md.name.lower() == e.name:
                    if e.stat not in (None, "mean") and md.kind != "latency":
                        _bad_stat(where, f"{md.name} is not a latency metric: it has no percentile rows")
                    hits.append(f"{md.name} ({label})")
        for mname, patterns in rows.monitors.items():
            if here("monitor", mname, label, plugin) and pr.pattern_match(patterns, e.name):
                hits.append(f"{e.name} (monitor {mname}: {label})")
    if hits:
        return hits, None
    missing = [x for x in e.sections if x in rows.absent]
    if missing and pr.pattern_match(rows.absent[missing[0]], e.name):
        return [], f"the suite runs no {missing[0]} monitor, so this row will be missing from the comparison"
    known = [*pr.VMSTAT_ROWS, *pr.DURATION_ROWS] + [md.name for _, _, mds in rows.workloads for md in mds]
    by_low = {k.lower(): k for k in known}
    hint = close_match(e.name, list(by_low))
    hint = (
        f" (did you mean {by_low[hint.split(chr(39))[1]]!r}?)"
        if hint
        else "; no workload metric, vmstat row, duration row or monitor row of this suite has that name"
    )
    raise UsageError(f"{where}: not a row of this suite{hint}")


def _labelled(text: str, hit: str) -> str:
    """``text`` with the section of ``hit`` ("NAME (vmstat: LABEL)", "NAME (monitor insn-count:
    LABEL)", "NAME (LABEL)") as its prefix: the kind or monitor and the label ("vmstat:LABEL:NAME",
    "insn-count:LABEL:NAME"), the name (and @STAT) as ``text`` wrote it."""
    name, _, section = hit.rpartition(" (")
    section = section.rstrip(")")
    kind, colon, label = section.partition(": ")
    written = text.rsplit(":", 1)[-1].strip()
    if written.partition("@")[0].strip().lower() == name.lower():
        name = written
    if not colon:
        return f"workload:{section}:{name}"
    return f"{kind.split(' ')[-1]}:{label}:{name}"


def _bad_stat(where: str, why: str) -> bool:
    raise UsageError(f"{where}: {why}")


def _check_headline(headline: list[str], workloads: list[ResolvedWorkload], where: str) -> list[str]:
    known = sorted({m.name for w in workloads for m in w.metrics})
    for name in headline:
        if name not in known:
            raise UsageError(f"{where}: suite.headline: no workload has a metric {name!r}{close_match(name, known)}")
    return list(headline)
