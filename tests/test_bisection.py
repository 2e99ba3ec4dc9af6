"""The bisection's decision core (mmbench/analysis/bisection.py) on simulated measurements: a
planted first bad commit among 16..64, effects and noise levels.  It names the planted commit at
least as often as its stated error bound promises when the effect is resolvable, stops undecided
rather than wrong when it is not, and handles skipped commits, resumed logs and bad ranges."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mmbench.analysis import bisection as bis
from mmbench.analysis.bisect_sim import Planted, simulate
from mmbench.errors import UsageError

ALPHA = 1 - bis.DEFAULT_CONFIDENCE


# ------------------------------------------------------------------------------------------
# The error rates across many simulated bisections

# (n, effect, cv, noise): a resolvable change, 5 spreads (planned power >= 95 % per step)
RESOLVABLE = [
    (16, 0.10, 0.02, "normal"),
    (64, 0.10, 0.02, "lognormal"),
    (32, 0.20, 0.0, "poisson"),  # counts around 1000: spread 3.2 %, change 6 spreads
    (64, 0.01, 0.0, "constant"),  # a deterministic clock: 1 % is certain at one round
]


@pytest.mark.parametrize("n,effect,cv,noise", RESOLVABLE)
def test_finds_planted_commit_at_least_as_often_as_stated(n, effect, cv, noise):
    t = simulate(120, n, effect, cv, noise, seed=11)
    assert t.refused == 0
    bound = max(t.bounds)
    # the stated bound: alpha for each step of the path, ceil(log2 n) steps
    assert bound == pytest.approx(ALPHA * math.ceil(math.log2(n)))
    assert t.rate(t.found) >= 1 - bound, vars(t)
    assert t.rate(t.wrong) <= bound
    # each decided step is wrong at most alpha of the time (measured: 1-1.5 %, 0 when constant)
    assert t.step_error_rate <= ALPHA, (t.step_errors, t.decided_steps)


def test_stops_undecided_rather_than_wrong_below_resolution():
    # 1 spread at most 10 rounds a step: the ends separate only by luck, steps rarely decide
    t = simulate(150, 32, 0.02, 0.02, "normal", seed=12)
    assert t.rate(t.refused) + t.rate(t.stopped) >= 0.9
    assert t.rate(t.wrong) <= ALPHA * 5
    assert t.rate(t.found) < 0.1


def test_no_change_in_the_range_is_refused_or_stopped_never_named():
    t = simulate(100, 16, 0.0, 0.02, "normal", seed=13)
    assert t.found == 0 and t.wrong <= 1
    assert t.rate(t.refused) >= 0.9


def test_more_rounds_resolve_a_smaller_change():
    # 2.5 spreads: undecided often at 5 rounds, found mostly at 20
    few = simulate(60, 16, 0.05, 0.02, "normal", seed=14, settings=bis.Settings(max_rounds=5))
    many = simulate(60, 16, 0.05, 0.02, "normal", seed=14, settings=bis.Settings(max_rounds=20))
    assert many.rate(many.found) > few.rate(few.found) + 0.2
    assert few.rate(few.wrong) <= 0.2 and many.rate(many.wrong) <= 0.2


# ------------------------------------------------------------------------------------------
# One bisection, step by step


def run(p: Planted, **kw):
    return bis.bisect(p.commits, p.measure, "Fault throughput", pilot=p.pilot(), **kw)


def test_deterministic_change_one_round_a_step_and_the_log_says_it():
    p = Planted(32, 21, 0.01, noise="constant")
    log = run(p)
    o = log.outcome
    assert (o.status, o.first_bad, o.last_good) == ("found", "c21", "c20")
    assert [s.index for s in log.steps] == [16, 24, 20, 22, 21]
    assert all(s.rounds == 1 for s in log.steps)
    assert [s.verdict for s in log.steps] == ["good", "bad", "good", "bad", "bad"]
    assert log.end_rounds == bis.MIN_END_ROUNDS
    assert o.error_bound == pytest.approx(5 * ALPHA)
    line = bis.step_line(log.steps[1], log.settings, 2)
    assert line.startswith("step 2: c24: 1010 over 1 rounds; vs good +1.00%") and ": bad, error probability" in line


def test_skipped_commit_takes_the_nearest_untested_one():
    p = Planted(16, 5, 0.01, noise="constant", fail={8, 3})
    log = run(p)
    skipped = [s for s in log.steps if s.verdict == "skipped"]
    assert [s.commit for s in skipped] == ["c8", "c3"]
    assert "build failed" in skipped[0].reason
    assert log.steps[1].commit == "c7"  # the neighbour of c8 (lower on a tie)
    assert log.outcome.first_bad == "c5"
    assert bis.step_line(skipped[0], log.settings, 1) == "step 1: c8: skipped (the build failed (simulated))"


def test_skipped_commit_just_before_the_first_bad_one_leaves_both():
    o = run(Planted(16, 5, 0.01, noise="constant", fail={8, 4})).outcome
    assert (o.status, o.candidates, o.last_good) == ("skipped", ["c4", "c5"], "c3")


def test_only_skipped_commits_left_names_every_candidate():
    p = Planted(8, 4, 0.01, noise="constant", fail={3, 4})
    o = run(p).outcome
    assert o.status == "skipped" and o.first_bad is None
    assert o.candidates == ["c3", "c4", "c5"] and (o.last_good, o.first_known_bad) == ("c2", "c5")
    assert o.message == "only skipped commits are left: the first bad commit is one of c3, c4, c5"


def test_a_commit_between_the_ends_stops_the_bisection():
    p = Planted(16, 9, 0.1, noise="constant")
    p.level = lambda i: 1050.0 if i == 8 else (1100.0 if i >= 9 else 1000.0)  # two changes
    log = run(p)
    assert log.steps[0].commit == "c8" and log.steps[0].verdict == "between"
    assert log.steps[0].rounds == bis.BETWEEN_ROUNDS  # never on one round: it cannot show the step's spread
    o = log.outcome
    assert o.status == "between" and o.first_bad is None
    assert o.candidates == p.commits[1:]
    assert "measures like neither end" in o.message


def test_undecided_step_stops_with_the_narrowed_range():
    p = Planted(16, 3, 0.1, 0.02, seed=2)
    base = p.draw
    flips = [0]

    def draw(i, rounds):  # c4 flips between the ends' levels: like neither, not resolvable
        if i != 4:
            return base(i, rounds)
        flips[0] += rounds
        return [1000.0 + 100 * (k % 2) for k in range(flips[0] - rounds, flips[0])]

    p.draw = draw
    log = run(p, settings=bis.Settings(max_rounds=6))
    last = log.steps[-1]
    assert (last.commit, last.verdict, last.rounds) == ("c4", "undecided", 6)
    assert "like neither end at 95% after 6 rounds" in last.reason
    assert log.outcome.status == "undecided"
    assert [s.commit for s in log.steps] == ["c8", "c4"]
    assert log.outcome.candidates == [f"c{i}" for i in range(1, 9)]
    assert "could not decide" in log.outcome.message


# ------------------------------------------------------------------------------------------
# The log: saved after every measurement, resumed from where it stopped


def test_resume_after_an_interrupt_gives_the_same_bisection(tmp_path):
    path = tmp_path / "bisect.json"
    whole = Planted(32, 13, 0.1, 0.02, seed=5)
    through = run(whole)

    p = Planted(32, 13, 0.1, 0.02, seed=5)
    pilot = p.pilot()
    calls = {"n": 0}

    def measure(commit, rounds):
        calls["n"] += 1
        if calls["n"] == 9:
            raise KeyboardInterrupt
        return p.measure(commit, rounds)

    with pytest.raises(KeyboardInterrupt):
        bis.bisect(p.commits, measure, "Fault throughput", pilot=pilot, save=lambda lg: lg.save(path))
    saved = bis.load_log(path)
    assert saved.outcome is None and saved.steps
    before = len(p.calls)
    log = bis.bisect(p.commits, p.measure, "Fault throughput", log=saved, save=lambda lg: lg.save(path))
    assert log.outcome.first_bad == through.outcome.first_bad == "c13"
    assert [(s.commit, s.samples, s.verdict) for s in log.steps] == [
        (s.commit, s.samples, s.verdict) for s in through.steps
    ]
    # nothing measured twice: both halves together made the calls of the bisection that ran through
    assert before == 8 and p.calls == whole.calls
    again = bis.load_log(path)
    assert again.outcome.first_bad == "c13"
    # a finished log resumes to itself without measuring
    n = len(p.calls)
    assert bis.bisect(p.commits, p.measure, "Fault throughput", log=again).outcome.first_bad == "c13"
    assert len(p.calls) == n


def test_resumed_log_round_trips_through_json(tmp_path):
    log = run(Planted(16, 7, 0.1, 0.02, seed=3, fail={8}))
    path = tmp_path / "log.json"
    log.save(path)
    back = bis.load_log(path)
    assert back.to_json() == log.to_json()
    d = json.loads(path.read_text())
    assert d["format"] == "mmbench-bisect-log" and d["version"] == 1
    assert d["outcome"]["first_bad"] == "c7"
    assert d["steps"][0]["verdict"] == "skipped" and d["steps"][1]["error_bound"] == pytest.approx(ALPHA)


def test_resume_refuses_another_range_row_or_settings(tmp_path):
    p = Planted(16, 7, 0.01, noise="constant")
    log = run(p)
    with pytest.raises(bis.BisectError, match="not this range"):
        bis.bisect(p.commits[:-1], p.measure, "Fault throughput", log=log)
    with pytest.raises(bis.BisectError, match="follows the row 'Fault throughput', not 'Elapsed'"):
        bis.bisect(p.commits, p.measure, "Elapsed", log=log)
    with pytest.raises(bis.BisectError, match=r"other settings \(confidence\)"):
        bis.bisect(p.commits, p.measure, "Fault throughput", log=log, settings=bis.Settings(confidence=0.99))


@pytest.mark.parametrize(
    "text,message",
    [
        ("{", r"not JSON \(line 1"),
        ('{"format": "other"}', "not an mmbench bisect log"),
        ('{"format": "mmbench-bisect-log", "version": 9}', "log version 9"),
        (
            '{"format": "mmbench-bisect-log", "version": 1, "row": "r", "commits": [], "settings": {}, '
            '"steps": [{"commit": "c1", "samples": ["x"], "index": 1}]}',
            "every sample must be a number",
        ),
        (
            '{"format": "mmbench-bisect-log", "version": 1, "row": "r", "commits": [], "settings": {}}',
            "no field 'steps'",
        ),
    ],
)
def test_damaged_log_is_one_line(tmp_path, text, message):
    path = tmp_path / "log.json"
    path.write_text(text)
    with pytest.raises(bis.BisectError, match=message) as e:
        bis.load_log(path)
    assert "\n" not in str(e.value) and isinstance(e.value, UsageError)
    with pytest.raises(bis.BisectError, match="no such file"):
        bis.load_log(tmp_path / "none.json")


# ------------------------------------------------------------------------------------------
# Ranges that cannot be bisected


def test_good_equals_bad_and_repeated_commits():
    p = Planted(4, 2, 0.1)
    with pytest.raises(bis.BisectError, match="good and bad are the same commit"):
        bis.bisect(["c0", "c0"], p.measure, "r")
    with pytest.raises(bis.BisectError, match="appears twice"):
        bis.bisect(["c0", "c1", "c1", "c4"], p.measure, "r")
    with pytest.raises(bis.BisectError, match="needs a good and a bad commit"):
        bis.bisect(["c0"], p.measure, "r")
    assert p.calls == []


def test_good_end_that_measures_like_the_bad_end_is_refused():
    p = Planted(16, 1, 0.0, 0.02, seed=4)  # no change at all
    with pytest.raises(bis.BisectError) as e:
        run(p)
    msg = str(e.value)
    assert "the good end c0 measures like the bad end c16 on Fault throughput" in msg
    assert "over 10 and 10 rounds" in msg and "\n" not in msg
    # the pilot grew one round a side per look up to --max-rounds, nothing else was measured
    assert {c for c, _ in p.calls} == {"c0", "c16"}


def test_an_end_that_does_not_build_is_refused():
    p = Planted(16, 5, 0.1, fail={16})
    with pytest.raises(bis.BisectError, match="the bad end c16 could not be measured: the build failed"):
        bis.bisect(p.commits, p.measure, "r")


@pytest.mark.parametrize(
    "settings,message",
    [
        (bis.Settings(confidence=1.0), "--confidence 1"),
        (bis.Settings(confidence=0.2), "--confidence 0.2"),
        (bis.Settings(max_rounds=0), "--max-rounds 0"),
        (bis.Settings(end_rounds=1), "end rounds 1"),
    ],
)
def test_bad_settings(settings, message):
    with pytest.raises(bis.BisectError, match=message):
        bis.bisect(["a", "b", "c"], lambda c, r: [1.0] * r, "r", settings=settings)


# ------------------------------------------------------------------------------------------
# Choosing the row to follow and sizing the ends


def test_choose_row_takes_the_primary_row_that_moved_most():
    good = {
        "Fault throughput": [100, 102, 98],
        "Elapsed": [10.0, 10.5, 9.5],
        "THP fault alloc": [500, 500, 500],
        "System": [1.0, 1.1],
    }
    bad = {"Fault throughput": [90, 92, 88], "Elapsed": [10.2, 10.8, 9.9], "THP fault alloc": [400, 400, 400]}
    c = bis.choose_row(good, bad, ["Fault throughput", "Elapsed"])
    assert c.row == "Fault throughput" and [m.row for m in c.moves] == ["Fault throughput", "Elapsed"]
    assert c.moves[0].effect == pytest.approx(5.0) and c.moves[0].pct == pytest.approx(-10.0)
    # a row constant within each end and different between them is the clearest of all
    c = bis.choose_row(good, bad, ["Fault throughput", "THP fault alloc", "System"])
    assert c.row == "THP fault alloc" and "constant within each end" in c.reason
    assert "not in both ends' runs: System" in c.reason
    assert bis.choose_row(good, bad).row == "THP fault alloc"  # no primary list: every shared row
    with pytest.raises(bis.BisectError, match="none of the suite's primary rows"):
        bis.choose_row(good, bad, ["System"])
    with pytest.raises(bis.BisectError, match="no row in common"):
        bis.choose_row({"a": [1]}, {"b": [2]})


def test_end_rounds_planned_from_the_pilot():
    s = bis.Settings()
    n, why = bis.plan_end_rounds([1000, 1020, 980], [1100, 1120, 1080], s)  # 5 spreads
    assert n == 3 and "5 spreads apart" in why
    n, why = bis.plan_end_rounds([1000, 1020, 980], [1040, 1060, 1020], s)  # 2 spreads
    assert n == 10 and "the most allowed" in why
    assert bis.plan_end_rounds([1.0], [2.0], s)[0] == bis.DEFAULT_END_ROUNDS
    assert bis.plan_end_rounds([1, 1], [2, 2], bis.Settings(end_rounds=7)) == (7, "7 rounds each (given)")
    # the planned power is what a step delivers: 5 spreads, 3 end rounds -> >= 95 %
    assert bis.step_power(5.0, 3, s) >= 0.95 > bis.step_power(2.0, 10, s)


def test_import_is_light():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, mmbench.analysis.bisection; print('numpy' in sys.modules, 'pydantic' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["False", "False"]


# ------------------------------------------------------------------------------------------
# scripts/make-bisect-repo, on a small stand-in for the kernel tree

REPO_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "make-bisect-repo"


def _git(cwd, *args):
    return subprocess.run(
        ["git", "-C", str(cwd), *args],
        check=True,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    ).stdout.strip()


@pytest.fixture(scope="module")
def small_kernel(tmp_path_factory):
    """A git repository with the files the script edits, Debian's top-level '/*' .gitignore, and
    a known-answer patch made with git format-patch."""
    root = tmp_path_factory.mktemp("kernel")
    src = root / "linux"
    src.mkdir()
    spec = importlib.util.spec_from_loader("make_bisect_repo", loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = str(REPO_SCRIPT)
    exec(compile(REPO_SCRIPT.read_text(), str(REPO_SCRIPT), "exec"), mod.__dict__)
    for path, kind in mod.EDITS:
        f = src / path
        f.parent.mkdir(parents=True, exist_ok=True)
        guard = path.replace("/", "_").replace(".", "_").upper()
        c_part = (
            "#ifndef __ASSEMBLY__\nint x;\n#endif /* !__ASSEMBLY__ */\n" if path.endswith("mmzone.h") else "int x;\n"
        )
        f.write_text(
            f"#ifndef {guard}\n#define {guard}\n{c_part}#endif /* {guard} */\n"
            if kind == "header"
            else "int f(void)\n{\n\treturn 0;\n}\n"
        )
    (src / ".gitignore").write_text("/*\n!/debian/\n")
    _git(src, "init", "-q", "-b", "main")
    _git(src, "add", "-f", "-A")
    _git(src, "commit", "-q", "-m", "base")
    _git(src, "tag", "base")
    (src / "mm" / "page_alloc.c").write_text("int f(void)\n{\n\treturn 1;\n}\n")
    _git(src, "commit", "-q", "-a", "-m", "mm: the known answer")
    _git(src, "format-patch", "-q", "-1", "-o", str(root))
    _git(src, "reset", "-q", "--hard", "base")
    return mod, src, next(root.glob("0001-*.patch"))


def make_repo(small_kernel, dest, *args):
    _, src, patch = small_kernel
    return subprocess.run(
        [sys.executable, str(REPO_SCRIPT), str(dest), "--from-git", f"{src}@base", "--patch", str(patch), *args],
        capture_output=True,
        text=True,
    )


def test_make_bisect_repo_places_the_known_answer(small_kernel, tmp_path):
    mod = small_kernel[0]
    out = make_repo(small_kernel, tmp_path / "a", "--commits", "16", "--first-bad", "5")
    assert out.returncode == 0, out.stderr
    repo = tmp_path / "a"
    log = _git(repo, "log", "--reverse", "--format=%H %s", "bisect-good..bisect-bad").splitlines()
    assert len(log) == 16
    assert log[4].split()[0] == _git(repo, "rev-parse", "bisect-first-bad")
    assert log[4].endswith("mm: the known answer")
    assert "<- known answer (tag bisect-first-bad)" in out.stdout
    assert "first bad: " in out.stdout and "(position 5 of 16)" in out.stdout
    # each harmless commit adds only an unused helper; headers inside their include guard
    for i, line in enumerate(log):
        if i == 4:
            continue
        diff = _git(repo, "show", "--format=", "--unified=0", line.split()[0])
        added = [d[1:] for d in diff.splitlines() if d.startswith("+") and not d.startswith("+++")]
        removed = [d for d in diff.splitlines() if d.startswith("-") and not d.startswith("---")]
        assert removed == [] and any(
            "static inline int __attribute__((__unused__)) mmbench_bisect_unused_" in a for a in added
        )
    mmzone = (repo / "include/linux/mmzone.h").read_text()  # in the C part, not seen by assembly
    assert (
        mmzone.index("#ifndef __ASSEMBLY__")
        < mmzone.index("mmbench_bisect_unused_1(")
        < mmzone.index("#endif /* !__ASSEMBLY__ */")
    )
    gfp = (repo / "include/linux/gfp.h").read_text()
    assert gfp.index("mmbench_bisect_unused_5(") < gfp.rindex("#endif")
    # the helper is valid C that warns about nothing, and emits no code
    c = tmp_path / "helper.c"
    c.write_text(mod.helper(7))
    cc = subprocess.run(
        ["gcc", "-Wall", "-Wextra", "-Werror", "-c", "-o", str(tmp_path / "h.o"), str(c)],
        capture_output=True,
        text=True,
    )
    assert cc.returncode == 0, cc.stderr
    nm = subprocess.run(["nm", str(tmp_path / "h.o")], capture_output=True, text=True).stdout
    assert "mmbench_bisect_unused" not in nm
    # same arguments, same hashes
    again = make_repo(small_kernel, tmp_path / "b", "--commits", "16", "--first-bad", "5")
    assert again.returncode == 0
    assert _git(tmp_path / "b", "rev-parse", "bisect-bad") == _git(repo, "rev-parse", "bisect-bad")


@pytest.mark.parametrize(
    "args,message",
    [
        (["--commits", "8"], "--commits 8: at least 16"),
        (["--first-bad", "0"], "--first-bad 0: must be between 1 and --commits 20"),
        (["--first-bad", "21"], "--first-bad 21: must be between 1 and --commits 20"),
    ],
)
def test_make_bisect_repo_bad_arguments(small_kernel, tmp_path, args, message):
    out = make_repo(small_kernel, tmp_path / "x", *args)
    assert out.returncode == 2 and out.stderr.strip() == f"make-bisect-repo: {message}"


def test_choose_row_passes_over_a_row_that_moved_less_than_a_rebuild_does():
    """The second TCG bisection's pilot: System time 14.9 spreads apart but +0.76 %, the allocator's
    instructions per page 3.95 spreads and +8.6 % (a rebuild alone moved System by 0.5 %)."""
    good = {"System": [32.30, 32.27, 32.27], "Instructions per page": [930.46, 975.84, 922.48]}
    bad = {"System": [32.53, 32.54, 32.51], "Instructions per page": [1028.45, 1025.55, 1019.13]}
    c = bis.choose_row(good, bad)
    assert c.row == "Instructions per page", c.reason
    assert "not System:" in c.reason and "under --min-change 2%" in c.reason
    assert bis.choose_row(good, bad, min_change=0).row == "System"  # the old rule: most spreads apart
    # a large move that is not clearly apart (under MIN_EFFECT spreads) does not outrank a clear one
    blurred = {**bad, "Instructions per page": [700.0, 1300.0, 1000.0]}
    assert bis.choose_row(good, blurred).row == "System"


def test_one_round_unlike_both_ends_measures_more():
    """A good end with two levels whose fresh rounds all landed on one (the second TCG bisection):
    one round of a good commit at the other level is unlike both ends, which is not yet "between"."""
    s = bis.Settings()
    good, bad = [826.0, 827.5, 826.1], [1028.0, 1027.2, 1029.1]
    assert bis.judge([914.8], good, bad, s, last=False).verdict is None
    assert bis.judge([914.8], good, bad, s, last=True).verdict == "between"
    # the step's own rounds then show its spread: like the good end
    both_levels = [914.8, 829.0, 940.0, 826.0, 951.0, 830.0, 945.0, 828.0]
    assert bis.judge(both_levels, good, bad, s, last=False).verdict == "good"


def test_choose_row_ranks_a_row_that_starts_at_zero_by_its_spreads():
    """A count that is 0 at the good end has no relative change: it is not passed over as small."""
    good = {"Instructions per page": [930.46, 975.84, 922.48], "THP fault fallback": [0.0, 0.0, 0.0]}
    bad = {"Instructions per page": [1028.45, 1025.55, 1019.13], "THP fault fallback": [118.0, 121.0, 124.0]}
    c = bis.choose_row(good, bad)
    assert c.row == "THP fault fallback" and "under --min-change" not in c.reason
