"""``mmbench plot``: the HTML report's graphs as PNG or SVG files (matplotlib, Agg backend).

The figures are those of :mod:`mmbench.report.figures` (metric distributions, monitor time
series, stall latency CDFs); one file per figure, named after the figure id
(``dist-<workload>-<metric>``, ``mon-<workload>-<monitor>-<series>``, ``stall-<workload>-<kind>``).
"""

from __future__ import annotations

import io
from pathlib import Path

from mmbench.errors import EnvironmentUnsupported
from mmbench.report import figures as figs
from mmbench.errors import UsageError
from mmbench.model.results import RunRecord
from mmbench.report.output import write_output

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def _names(runs: list[RunRecord]) -> list[str]:
    from mmbench.analysis.compare import unique_names

    return unique_names(runs)


def _t(s: str) -> str:
    return s.replace("$", r"\$")  # never mathtext: names come from the store


def _draw(ax, fig: figs.Figure, names: list[str]) -> None:
    if fig.kind == "box":
        stats, pos, colors = [], [], []
        for b in fig.boxes:
            stats.append(
                {
                    "med": b.med,
                    "q1": b.q1,
                    "q3": b.q3,
                    "whislo": b.lo,
                    "whishi": b.hi,
                    "mean": b.mean,
                    "label": _t(names[b.run]),
                    "fliers": [],
                }
            )
            pos.append(b.run)
            colors.append(COLORS[b.run % len(COLORS)])
        art = ax.bxp(
            stats,
            positions=pos,
            widths=0.45,
            showmeans=True,
            patch_artist=True,
            meanprops={"marker": "D", "markersize": 5, "markerfacecolor": "black", "markeredgecolor": "black"},
        )
        for patch, c in zip(art["boxes"], colors):
            patch.set_facecolor(c)
            patch.set_alpha(0.25)
            patch.set_edgecolor(c)
        for med, c in zip(art["medians"], colors):
            med.set_color(c)
            med.set_linewidth(2)
        for b, c in zip(fig.boxes, colors):
            n = len(b.points)
            xs = [b.run + 0.32 + 0.06 * ((j * 0.618034) % 1) for j in range(n)]
            ax.scatter(xs, b.points, s=14, color=c, alpha=0.8, zorder=3)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([_t(n) for n in names])
        ax.set_xlim(-0.6, len(names) - 0.4)
    else:
        seen: set[int] = set()
        for s in sorted(fig.series, key=lambda s: not s.faint):
            c = COLORS[s.run % len(COLORS)]
            pts = [(x, y) for x, y in zip(s.x, s.y) if x is not None and y is not None]
            if not pts:
                continue
            xs, ys = zip(*pts)
            if fig.kind == "cdf":
                label = _t(s.label)
            else:
                label = None if s.faint or s.run in seen else _t(names[s.run])
                if not s.faint:
                    seen.add(s.run)
            ax.plot(
                xs,
                ys,
                color=c,
                alpha=0.3 if s.faint else 1.0,
                linewidth=0.8 if s.faint else 1.6,
                drawstyle="steps-post" if fig.kind == "cdf" else "default",
                label=label,
            )
        if fig.logx:
            ax.set_xscale("log")
        if fig.kind == "cdf":
            ax.set_ylim(0, 1.02)
        elif fig.yzero:
            ax.set_ylim(bottom=0)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7 if fig.kind == "cdf" else 8, loc="best")
    ax.set_title(_t(f"{fig.workload}: {fig.title}"), fontsize=10)
    ax.set_xlabel(_t(fig.xlabel), fontsize=8)
    ax.set_ylabel(_t(fig.ylabel), fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(True, alpha=0.3)


def write_plots(runs: list[RunRecord], outdir: Path, fmt: str = "png") -> list[Path]:
    """Write one ``fmt`` (png or svg) file per figure of ``runs`` into ``outdir``; their paths."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"plot format {fmt!r}: png or svg")
    try:
        import matplotlib
    except ImportError:
        raise EnvironmentUnsupported(
            "mmbench plot needs matplotlib: pip install 'mmbench[plot]' "
            "(scripts/setup.sh installs it); `mmbench report` draws the "
            "same graphs without it"
        ) from None
    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise UsageError(f"-o {outdir}: not a directory (plot writes one file per figure into a folder)")
    outdir.mkdir(parents=True, exist_ok=True)
    names = _names(runs)
    figures = figs.collect(runs, names)
    used: dict[str, int] = {}
    paths: list[Path] = []
    for f in figures:
        k = used.get(f.id, 0)
        used[f.id] = k + 1
        stem = f.id if not k else f"{f.id}-{k}"
        mf = MplFigure(figsize=(7, 4), dpi=100, layout="tight")
        FigureCanvasAgg(mf)
        _draw(mf.add_subplot(), f, names)
        path = outdir / f"{stem}.{fmt}"
        buf = io.BytesIO()
        mf.savefig(buf, format=fmt)
        write_output(str(path), buf.getvalue())  # only ever a regular file, replaced atomically
        paths.append(path)
    return paths
