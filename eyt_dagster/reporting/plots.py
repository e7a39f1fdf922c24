"""Static figures for the analysis tables, rendered off-screen to PNG bytes.

Each function takes one analysis table in long format and returns a PNG. Figures are drawn on a bare
`matplotlib.figure.Figure` with the Agg canvas, so nothing touches pyplot's global state or needs a display.
Empty input (or a metric with no rows) gives a small "no data" placeholder instead of an error.
`png_markdown` wraps a PNG as an inline markdown image, which Dagster's UI renders in a markdown metadata value.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from eyt_dagster.core.result_cache import CacheCounters, ResultStore, content_key

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: loading the code location stays light
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

DIMENSION_ORDER = ("empathy", "persona", "anthropomorphic")
FIGSIZE = (6.0, 3.5)
DPI = 100
POOL_STYLES = ("-", "--", ":", "-.")
COLORS = tuple(f"C{i}" for i in range(10))
BASELINE_SUFFIX = " (baseline)"


def _label(target: object, baseline: bool) -> str:
    return f"{target}{BASELINE_SUFFIX if baseline else ''}"


def _baselines(df: pd.DataFrame) -> set[str]:
    """Targets flagged as baseline on any of their rows."""
    if "is_baseline" not in df.columns:
        return set()
    return {str(t) for t in df.loc[df["is_baseline"].fillna(False).astype(bool), "target"]}


def _to_png(fig: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    from eyt_dagster.reporting.cjk_font import use_cjk_where_needed

    buf = io.BytesIO()
    FigureCanvasAgg(fig)
    use_cjk_where_needed(fig.findobj(Text))  # only texts with Chinese characters change
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _placeholder(text: str = "no data") -> bytes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.0, 1.0), dpi=DPI)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=12, color="0.4")
    return _to_png(fig)


def _dimensions(values: Iterable[object]) -> list[str]:
    """The known dimensions in paper order, then any others alphabetically."""
    present = {str(v) for v in values}
    return [d for d in DIMENSION_ORDER if d in present] + sorted(present - set(DIMENSION_ORDER))


def _line_panels(df: pd.DataFrame, x: str, y: str, xlabel: str, ylabel: str, title: str) -> bytes:
    """One panel per dimension, one line per target x pool (colour per target, line style per pool)."""
    from matplotlib.figure import Figure

    df = df.dropna(subset=[x, y])
    if df.empty:
        return _placeholder()
    dims = _dimensions(df["dimension"])
    targets = sorted(df["target"].astype(str).unique())
    pools = sorted(df["pool"].astype(str).unique())
    baselines = _baselines(df)

    def line_label(target: str, pool: str) -> str:
        return _label(target, target in baselines) + (f" / {pool}" if len(pools) > 1 else "")

    labels = [line_label(t, p) for t in targets for p in pools]
    ncol = max(1, min(3, len(labels), int(90 // max(len(x) for x in labels))))
    legend_rows = -(-len(labels) // ncol)
    size = (max(FIGSIZE[0], 2.6 * len(dims)), FIGSIZE[1] + 0.18 * max(0, legend_rows - 2))
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    axes = fig.subplots(1, len(dims), sharey=True, squeeze=False)[0]
    handles: dict[str, Line2D] = {}
    for ax, dim in zip(axes, dims):
        for (target, pool), cell in df[df["dimension"].astype(str) == dim].groupby(["target", "pool"]):
            cell = cell.sort_values(x)
            label = line_label(str(target), str(pool))
            (line,) = ax.plot(
                cell[x],
                cell[y],
                marker="o",
                markersize=3,
                label=label,
                color=COLORS[targets.index(str(target)) % len(COLORS)],
                linestyle=POOL_STYLES[pools.index(str(pool)) % len(POOL_STYLES)],
            )
            handles.setdefault(label, line)
        ax.set_title(dim, fontsize=10)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(ylabel, fontsize=9)
    fig.suptitle(title, fontsize=11)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", fontsize=8, ncol=ncol, frameon=False)
    return _to_png(fig)


def turn_curves_png(df: pd.DataFrame, *, title: str = "Mean judge score by turn") -> bytes:
    """Mean score (0-100) per turn index, a panel per dimension: shows the warm-up effect."""
    if df is None or df.empty:
        return _placeholder()
    return _line_panels(df, "turn", "mean_score", "turn", "mean score (0-100)", title)


def alpha_sweep_png(df: pd.DataFrame, *, title: str = "Weighted score by alpha") -> bytes:
    """Turn-weighted score (0-100) as a function of the weighting parameter alpha, a panel per dimension."""
    if df is None or df.empty:
        return _placeholder()
    return _line_panels(df, "alpha", "weighted", "alpha", "weighted score (0-100)", title)


def _whiskers(value: pd.Series, low: pd.Series, high: pd.Series) -> np.ndarray:
    """Non-negative whisker lengths; a missing bound draws no whisker on that side."""
    below = (value - low).astype(float).clip(lower=0).fillna(0).to_numpy()
    above = (high - value).astype(float).clip(lower=0).fillna(0).to_numpy()
    return np.vstack([below, above])


def _interval_axes(pools: pd.Series) -> tuple[Figure, Axes, np.ndarray]:
    """Axes for one row per entry, top to bottom, with a gap between consecutive pools."""
    from matplotlib.figure import Figure

    keys = pools.astype(str).to_numpy()
    gaps = np.concatenate([[0.0], np.cumsum(keys[1:] != keys[:-1]) * 0.6]) if len(keys) else np.zeros(0)
    fig = Figure(figsize=(FIGSIZE[0], max(FIGSIZE[1], 1.2 + 0.28 * len(keys))), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.invert_yaxis()
    return fig, ax, np.arange(len(keys), dtype=float) + gaps


def interval_png(df: pd.DataFrame, metric: str, *, title: str | None = None) -> bytes:
    """Point estimate and interval of one metric per target, grouped by pool (colour per pool)."""
    if df is None or df.empty:
        return _placeholder()
    rows = df[(df["metric"] == metric) & df["value"].notna()].sort_values(["pool", "target"])
    if rows.empty:
        return _placeholder(f"no data for {metric}")
    baselines = _baselines(df)
    pools = sorted(rows["pool"].astype(str).unique())
    fig, ax, y = _interval_axes(rows["pool"])
    for pool in pools:
        mask = (rows["pool"].astype(str) == pool).to_numpy()
        part = rows[mask]
        ax.errorbar(
            part["value"],
            y[mask],
            xerr=_whiskers(part["value"], part["ci_low"], part["ci_high"]),
            fmt="o",
            capsize=3,
            color=COLORS[pools.index(pool) % len(COLORS)],
            label=pool,
        )
    ax.set_yticks(y, [_label(t, str(t) in baselines) for t in rows["target"]], fontsize=8)
    ax.set_xlabel(metric, fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or f"{metric} with interval, by pool", fontsize=11)
    ax.legend(title="pool", fontsize=8, title_fontsize=8, loc="best")
    return _to_png(fig)


MAX_PAIRS_SHOWN = 40  # pairs per pool in the pairwise figure


def pairs_shown(rows: pd.DataFrame) -> pd.DataFrame:
    """The pairwise rows the figure draws: every pair of a pool with at most MAX_PAIRS_SHOWN, else the pool's
    MAX_PAIRS_SHOWN largest |diff|; in pool and pair order."""
    rank = rows["diff"].abs().groupby(rows["pool"]).rank(method="first", ascending=False)
    return rows[rank <= MAX_PAIRS_SHOWN].sort_values(["pool", "target_a", "target_b"])


def pairwise_shown(df: pd.DataFrame, metric: str, title: str | None = None) -> tuple[pd.DataFrame, str]:
    """The rows of `metric` pairwise_png draws (pairs_shown) and its title, which says when a pool's pairs were cut
    to its MAX_PAIRS_SHOWN largest but not how many there were: the figure depends only on what it draws, so it is
    the same figure (and its cached PNG is found) when a target added does not enter the largest differences."""
    rows = df[(df["metric"] == metric) & df["diff"].notna()]
    title = title or f"Paired differences in {metric}"
    if rows.empty:
        return rows, title
    shown = pairs_shown(rows)
    if len(shown) < len(rows):
        title += f": the {MAX_PAIRS_SHOWN} largest |a − b| per pool"
    return shown, title


def pairwise_png(
    df: pd.DataFrame, metric: str, *, baseline_targets: Collection[str] = (), title: str | None = None
) -> bytes:
    """Paired differences (a - b) with intervals around a zero line; solid when significant. With more than
    MAX_PAIRS_SHOWN pairs per pool only the pool's largest |a - b| are drawn (the title says so): a figure of
    4,950 rows per pool at 100 targets is neither readable nor cheap (it took minutes to draw); the table holds
    every pair."""
    from matplotlib.lines import Line2D

    if df is None or df.empty:
        return _placeholder()
    rows, title = pairwise_shown(df, metric, title)
    if rows.empty:
        return _placeholder(f"no data for {metric}")
    pools = sorted(rows["pool"].astype(str).unique())
    fig, ax, y = _interval_axes(rows["pool"])
    ax.axvline(0.0, color="0.3", linewidth=1)
    whiskers = _whiskers(rows["diff"], rows["ci_low"], rows["ci_high"])
    # filled: significant after the Holm adjustment (the interval alone when the table predates it)
    shown = "significant_adjusted" if "significant_adjusted" in rows.columns else "excludes_zero"
    excludes = rows[shown].fillna(False).astype(bool).to_numpy()
    yes, no = (
        ("significant (Holm-adjusted)", "not significant")
        if shown == "significant_adjusted"
        else ("interval excludes 0", "interval includes 0")
    )
    pool_of, values = rows["pool"].astype(str).to_numpy(), rows["diff"].to_numpy()
    for pool in pools:  # one errorbar call per pool and kind of marker, not one per pair (9,900 at 100 targets)
        color = COLORS[pools.index(pool) % len(COLORS)]
        for significant in (False, True):
            at = np.flatnonzero((pool_of == pool) & (excludes == significant))
            if not at.size:
                continue
            ax.errorbar(
                values[at],
                np.asarray(y)[at],
                xerr=whiskers[:, at],
                fmt="o",
                capsize=3,
                color=color,
                markerfacecolor=color if significant else "white",
                linestyle="none",
                elinewidth=1.6 if significant else 1.0,
            )
    labels = [
        f"{_label(a, str(a) in baseline_targets)} − {_label(b, str(b) in baseline_targets)}"
        for a, b in zip(rows["target_a"], rows["target_b"])
    ]
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel(f"difference in {metric} (a − b)", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=11)
    handles = [
        Line2D([], [], marker="o", linestyle="none", color=COLORS[i % len(COLORS)], label=f"pool {p}")
        for i, p in enumerate(pools)
    ]
    handles += [
        Line2D([], [], marker="o", linestyle="none", color="0.3", label=yes),
        Line2D([], [], marker="o", linestyle="none", color="0.3", markerfacecolor="white", label=no),
    ]
    ax.legend(handles=handles, fontsize=8, loc="best")
    return _to_png(fig)


MAX_TARGETS_SHOWN = 10  # targets in a step's figure of one line or row per target


def targets_shown(df: pd.DataFrame, value: str, limit: int = MAX_TARGETS_SHOWN) -> tuple[pd.DataFrame, str]:
    """The rows of at most `limit` targets, for a step's metadata figure: all of them when there are that few,
    else the limit/2 highest and limit/2 lowest by their mean `value` (a figure of 200 lines or rows at 100 targets
    is neither readable nor cheap: seconds of drawing per figure), and the note its title ends with ("" when every
    target is shown). The table and the HTML report hold every target."""
    targets = df["target"].dropna().unique()
    if len(targets) <= limit:
        return df, ""
    means = df.groupby("target")[value].mean().sort_values(ascending=False, kind="stable")
    keep = [*means.index[: limit // 2], *means.index[len(means) - (limit - limit // 2) :]]
    return df[df["target"].isin(keep)], f": the {limit // 2} highest and {limit - limit // 2} lowest targets"


FIGURE_KIND = "figure.png.v1"  # a step's figure, by what it draws


def cached_png(store: ResultStore, frame: pd.DataFrame, draw: Callable[[pd.DataFrame], bytes], *parts: str) -> bytes:
    """`draw(frame)`, or the PNG drawn before of the same rows (values and order), the same `parts` (which figure,
    its title) and the same matplotlib: a step's figure of a subset of targets is the same figure when a target is
    added outside the subset. The figure depends on nothing but the rows and the title."""
    from importlib.metadata import version

    hashed = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    key = content_key(version("matplotlib"), tuple(str(c) for c in frame.columns), hashed, *parts)
    found = store.get_many(FIGURE_KIND, [key])
    counters = getattr(store, "counters", None)
    if key in found:
        if isinstance(counters, CacheCounters):
            counters.count(FIGURE_KIND, 1, 0)
        return found[key]
    png = draw(frame)
    store.put_many(FIGURE_KIND, {key: png})
    if isinstance(counters, CacheCounters):
        counters.count(FIGURE_KIND, 0, 1)
    return png


PAIRWISE_DRAWN = (  # what pairwise_png reads of a row
    "pool",
    "metric",
    "target_a",
    "target_b",
    "diff",
    "ci_low",
    "ci_high",
    "significant_adjusted",
    "excludes_zero",
)


def cached_pairwise_png(
    store: ResultStore, df: pd.DataFrame, metric: str, baseline_targets: Collection[str] = ()
) -> tuple[bytes, int]:
    """pairwise_png of `metric` kept by what it draws (cached_png): the rows pairwise_shown picks, their columns
    that pairwise_png reads, which of their targets are baselines and the title. Returns the PNG and the number of
    pairs drawn."""
    shown, title = pairwise_shown(df, metric)
    baselines = set(baseline_targets)
    frame = shown[[c for c in PAIRWISE_DRAWN if c in shown.columns]].assign(
        baseline_a=shown["target_a"].isin(baselines), baseline_b=shown["target_b"].isin(baselines)
    )
    png = cached_png(
        store,
        frame,
        lambda rows: pairwise_png(rows, metric, baseline_targets=baselines, title=title),
        "pairwise_png",
        title,
    )
    return png, len(shown)


def png_markdown(png: bytes, alt: str) -> str:
    """An inline markdown image `![alt](data:image/png;base64,...)`; brackets in alt become parentheses."""
    clean = " ".join(alt.replace("[", "(").replace("]", ")").split())
    return f"![{clean}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"


__all__ = [
    "alpha_sweep_png",
    "cached_pairwise_png",
    "cached_png",
    "interval_png",
    "pairwise_png",
    "pairwise_shown",
    "png_markdown",
    "targets_shown",
    "turn_curves_png",
]


def distribution_png(df: pd.DataFrame, value: str, by: str, *, title: str) -> bytes:
    """Box plots of `value` per `by` group (e.g. contrast totals per subscale), groups sorted by name."""
    from matplotlib.figure import Figure

    data = df[[by, value]].dropna() if len(df) else df
    if data.empty:
        return _placeholder()
    groups = sorted(data[by].astype(str).unique())
    fig = Figure(figsize=(7.5, 0.35 * len(groups) + 1.2), dpi=DPI)
    ax = fig.add_subplot()
    ax.boxplot([data.loc[data[by].astype(str) == g, value].to_numpy() for g in groups], vert=False)
    ax.set_yticks(range(1, len(groups) + 1), groups, fontsize=7)
    ax.set_xlabel(value)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _to_png(fig)
