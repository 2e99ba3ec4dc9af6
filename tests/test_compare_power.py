"""Issue 13 item 3: a comparison whose headline rows cannot detect a 5 % change says so at the
top of every report, with the number of iterations per run that would."""

import json
import math

import pytest

from mmbench.analysis import significance as sig
from mmbench.analysis.compare import build_comparison
from mmbench.plugins import exporters
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun

TIME = MetricDef("Time", "s", "lower", "time")
TPUT = MetricDef("Throughput", "ops/s", "higher", "rate")


def with_sd(k: int, mean: float, sd: float) -> list[float]:
    """k values with exactly this mean and sample standard deviation."""
    z = [i - (k - 1) / 2 for i in range(k)]
    s = math.sqrt(sum(v * v for v in z) / (k - 1))
    return [mean + sd * v / s for v in z]


def run(name, per_metric, suite_text=""):
    n = len(next(iter(per_metric.values())))
    its = [IterationResult("w", i, False, "ok", samples={m: [v[i]] for m, v in per_metric.items()}) for i in range(n)]
    return RunRecord(
        name, "complete", 0.0, 1.0, suite_text, "", {}, {}, [WorkloadRun("w", "bench", {}, [TIME, TPUT], its)]
    )


def test_noisy_headline_warned_at_top_with_iterations():
    a = run("a", {"Time": with_sd(3, 100, 4), "Throughput": with_sd(3, 50, 0.1)})
    b = run("b", {"Time": with_sd(3, 101, 4), "Throughput": with_sd(3, 50, 0.1)})
    c = build_comparison([a, b])
    assert len(c.warnings) == 1  # Time is the first metric: the headline
    w = c.warnings[0]
    assert w.startswith("w: Time (Amean) could not detect a 5% change")
    k = sig.iterations_to_detect(with_sd(3, 100, 4), with_sd(3, 101, 4))
    assert f"{k} iterations per run would" in w
    text = exporters()["text"].render(c, {})
    assert text.startswith("Warnings\n  ! w: Time (Amean)")  # no environment differences here
    md = exporters()["markdown"].render(c, {})
    assert md.startswith("### Warnings")
    d = json.loads(exporters()["json"].render(c, {}))
    assert d["notes"][0] == f"warning: {w}"


def test_suite_headline_chooses_the_rows():
    suite = '[suite]\nheadline = ["Throughput"]\n\n[workloads.w]\n'
    a = run("a", {"Time": with_sd(3, 100, 4), "Throughput": with_sd(3, 50, 3)}, suite)
    b = run("b", {"Time": with_sd(3, 100, 4), "Throughput": with_sd(3, 50, 3)}, suite)
    c = build_comparison([a, b])
    assert [w.split(" could")[0] for w in c.warnings] == ["w: Throughput (Hmean)"]


def test_quiet_headline_no_warning_and_single_iteration_says_no_test():
    a = run("a", {"Time": with_sd(10, 100, 1), "Throughput": with_sd(10, 50, 1)})
    b = run("b", {"Time": with_sd(10, 100, 1), "Throughput": with_sd(10, 50, 1)})
    assert build_comparison([a, b]).warnings == []
    one = build_comparison(
        [run("a", {"Time": [100.0], "Throughput": [5.0]}), run("b", {"Time": [100.0], "Throughput": [5.0]})]
    )
    assert len(one.warnings) == 1 and "one iteration a side allows no test" in one.warnings[0]
    assert build_comparison([run("a", {"Time": [1.0, 2.0], "Throughput": [1.0, 2.0]})]).warnings == []


@pytest.mark.parametrize("sd", [2.0, 5.0, 10.0])
def test_iterations_to_detect_is_where_the_mde_falls_to_5pct(sd):
    base, new = with_sd(4, 100, sd), with_sd(4, 100, sd)
    k = sig.iterations_to_detect(base, new)
    assert k is not None and k >= 2
    # the same per-iteration variation at k iterations detects 5 %, at k - 1 it does not
    assert sig.min_detectable_effect(with_sd(k, 100, sd), with_sd(k, 100, sd)) <= 5.0 + 1e-9
    if k > 2:
        assert sig.min_detectable_effect(with_sd(k - 1, 100, sd), with_sd(k - 1, 100, sd)) > 5.0
    assert sig.iterations_to_detect([1.0], [1.0, 2.0]) is None


def test_html_report_shows_the_warning_first():
    from mmbench.report.html import render_report

    a = run("a", {"Time": with_sd(3, 100, 4), "Throughput": with_sd(3, 50, 0.1)})
    b = run("b", {"Time": with_sd(3, 101, 4), "Throughput": with_sd(3, 50, 0.1)})
    page = render_report([a, b])
    assert '<section id="warnings">' in page
    assert page.index('id="warnings"') < page.index('id="runs"')
    assert "could not detect a 5% change" in page


def test_text_warning_follows_the_environment_differences():
    a = run("a", {"Time": with_sd(3, 100, 4), "Throughput": with_sd(3, 50, 0.1)})
    b = run("b", {"Time": with_sd(3, 101, 4), "Throughput": with_sd(3, 50, 0.1)})
    a.fingerprint, b.fingerprint = {"kernel": "6.1"}, {"kernel": "6.2"}
    lines = exporters()["text"].render(build_comparison([a, b]), {}).splitlines()
    assert lines[0] == "Environment differences"
    assert lines.index("Warnings") < next(i for i, l in enumerate(lines) if l.startswith("w (bench)"))
