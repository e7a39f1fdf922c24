"""Figures for the SpeechEQ breakdown table (seq_tables.seq_breakdown), rendered off-screen to PNG bytes with
the helpers and style of eyt_dagster.reporting.plots. Empty input gives a small placeholder PNG instead of an error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from eyt_dagster.reporting.plots import COLORS, DPI, _label, _placeholder, _to_png
from eyt_dagster.speech_eq.conditions import DEFAULT_CONDITION
from eyt_dagster.speech_eq.seq import CHANCE

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: loading the code location stays light
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

METRIC_LABELS = {
    "acc1": "Acc1 (round 1)",
    "acc2": "Acc2 (round 2)",
    "acc_traj": "Acc_traj (both rounds)",
    "acc2_direct": "Acc2 under direct inference",
}


def _subscale_rows(breakdown: pd.DataFrame | None, condition: str, value: str) -> pd.DataFrame:
    """Subscale rows of one condition that have the value, in the table's (EQ-i) order."""
    if breakdown is None or breakdown.empty:
        return pd.DataFrame()
    rows = breakdown[(breakdown["level"] == "subscale") & (breakdown["condition"] == condition)]
    return rows[rows[value].notna()]


def _targets(rows: pd.DataFrame) -> list[tuple[str, bool]]:
    """(target, is_baseline), models first, then baselines, each alphabetically."""
    flags = rows.groupby("target")["is_baseline"].any()
    return sorted(((str(t), bool(b)) for t, b in flags.items()), key=lambda tb: (tb[1], tb[0]))


def _grouped_bars(rows: pd.DataFrame, value: str) -> tuple[Figure, Axes]:
    """Horizontal bars, one group per subscale (top to bottom in EQ-i order), one bar per target."""
    from matplotlib.figure import Figure

    subscales = list(dict.fromkeys(rows["name"].astype(str)))
    names = dict(zip(rows["name"].astype(str), rows["display_name"].astype(str)))
    targets = _targets(rows)
    height = 0.8 / len(targets)
    fig = Figure(figsize=(7.0, 1.4 + len(subscales) * (0.12 + 0.16 * len(targets))), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(subscales), dtype=float)
    for i, (target, baseline) in enumerate(targets):
        part = rows[rows["target"].astype(str) == target].set_index("name")[value]
        values = part.reindex(subscales).to_numpy(dtype=float)
        offset = -0.4 + height * (i + 0.5)
        ax.barh(
            y + offset,
            np.nan_to_num(values),
            height=height,
            color=COLORS[i % len(COLORS)],
            hatch="//" if baseline else None,
            label=_label(target, baseline),
        )
    ax.set_yticks(y, [names[s] for s in subscales], fontsize=8)
    ax.invert_yaxis()
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    return fig, ax


def _legend(fig: Figure, ax: Axes, handles: Sequence[Artist] | None = None, title: str | None = None) -> None:
    """A legend below the axes, up to three entries a row."""
    if handles is None:
        handles, _ = ax.get_legend_handles_labels()
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(3, len(handles)),
        fontsize=8,
        frameon=False,
        title=title,
        title_fontsize=8,
    )


def subscale_accuracy_png(
    breakdown: pd.DataFrame | None,
    metric: str = "acc_traj",
    *,
    condition: str = DEFAULT_CONDITION,
    title: str | None = None,
) -> bytes:
    """Per-subscale accuracy of every target under one condition (paper Figure 2's view): grouped horizontal
    bars, baselines hatched and labelled, a dashed line at chance (0.25 for Acc_traj, 0.5 for one round)."""
    rows = _subscale_rows(breakdown, condition, metric)
    if rows.empty:
        return _placeholder(f"no {metric} for {condition}")
    fig, ax = _grouped_bars(rows, metric)
    chance = CHANCE.get(metric, 0.5)
    ax.axvline(chance, color="0.3", linestyle="--", linewidth=1, label=f"chance ({chance:g})")
    ax.set_xlim(0.0, 1.02)
    ax.set_xlabel(METRIC_LABELS.get(metric, metric), fontsize=9)
    ax.set_title(title or f"{METRIC_LABELS.get(metric, metric)} per EQ-i subscale ({condition})", fontsize=11)
    _legend(fig, ax)
    return _to_png(fig)


def sequential_direct_png(
    breakdown: pd.DataFrame | None, *, condition: str = DEFAULT_CONDITION, title: str | None = None
) -> bytes:
    """Acc2 under direct minus sequential inference per subscale (paper Figure 3): bars right of zero are
    subscales where giving the correct turn-4 clip as history helped. Targets without direct inference are
    left out. With one target, bars are coloured by sign; with several, by target."""
    from matplotlib.patches import Patch, Rectangle

    rows = _subscale_rows(breakdown, condition, "sequential_direct_delta")
    if rows.empty:
        return _placeholder(f"no direct inference for {condition}")
    fig, ax = _grouped_bars(rows, "sequential_direct_delta")
    if len(_targets(rows)) == 1:
        for bar in ax.patches:
            assert isinstance(bar, Rectangle)  # the axes hold barh's bars only
            bar.set_color("C2" if bar.get_width() > 0 else "C3")
        handles = [Patch(color="C2", label="direct better"), Patch(color="C3", label="sequential better or equal")]
        _legend(fig, ax, handles, title=_label(*_targets(rows)[0]))
    else:
        _legend(fig, ax)
    ax.axvline(0.0, color="0.3", linewidth=1)
    limit = max(0.05, float(np.nanmax(np.abs(rows["sequential_direct_delta"].to_numpy(dtype=float)))) * 1.1)
    ax.set_xlim(-limit, limit)
    ax.set_xlabel("Acc2 direct − Acc2 sequential", fontsize=9)
    ax.set_title(title or f"Direct vs sequential inference, round 2, per subscale ({condition})", fontsize=11)
    return _to_png(fig)
