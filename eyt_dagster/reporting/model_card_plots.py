"""The model-card figure: one compact panel per model over the dimensions of both benchmarks, PNG bytes drawn
off-screen with the style of eyt_dagster.reporting.plots.

Every dimension is put on 0-1 so the panels read alike: shares as they are, 0-100 scores / 100, drift (0-2,
lower is better) as 1 - drift / 2, SEQ (40-160) as (SEQ - 40) / 120. Whiskers are the cards' 95% intervals
mapped the same way. A benchmark the model did not run is written across its half of the panel.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from eyt_dagster.reporting.model_cards import POOLED
from eyt_dagster.reporting.plots import BASELINE_SUFFIX, DPI, _placeholder, _to_png

# (card column, label, to 0-1)
# (column, label, the value scaled to 0-1)
Axis = tuple[str, str, Callable[[float], float]]
EYT_AXES: tuple[Axis, ...] = (
    ("explicit_acc", "explicit acc", lambda v: v),
    ("latent_acc", "latent acc", lambda v: v),
    ("emotion_acc", "emotion acc", lambda v: v),
    ("emotion_macro_f1", "emotion F1", lambda v: v),
    ("drift", "1 - drift/2", lambda v: 1 - v / 2),
    ("ficr", "FICR", lambda v: v),
    ("satisfaction", "satisfaction", lambda v: v / 100),
    ("empathy", "Empathy", lambda v: v / 100),
    ("persona", "Persona", lambda v: v / 100),
    ("anthropomorphic", "Anthropomorphic", lambda v: v / 100),
)
SHORT = {"EYT-Bench": "EYT", "SpeechEQ": "Speech"}
SPEECH_AXES: tuple[Axis, ...] = (
    ("acc1", "Acc1", lambda v: v),
    ("acc2", "Acc2", lambda v: v),
    ("acc_traj", "Acc_traj", lambda v: v),
    ("seq", "(SEQ-40)/120", lambda v: (v - 40) / 120),
)


def _value(card: pd.Series, column: str) -> float:
    value = card.get(column)
    return float(value) if value is not None and not pd.isna(value) else math.nan


def card_axes(card: pd.Series) -> list[tuple[str, str, float, float, float]]:
    """(benchmark, label, value, low, high) on 0-1 for every dimension of one card (NaN where not run)."""
    out = []
    for benchmark, prefix, axes in (("EYT-Bench", f"eyt_{POOLED}_", EYT_AXES), ("SpeechEQ", "speech_", SPEECH_AXES)):
        for column, label, scale in axes:
            v, lo, hi = (_value(card, f"{prefix}{column}{s}") for s in ("", "_ci_low", "_ci_high"))
            lo, hi = sorted((scale(lo), scale(hi)))
            out.append((benchmark, label, scale(v), lo, hi))
    return out


CARDS_PLOT_TITLE = "Model cards (pooled EYT-Bench, SpeechEQ default)"
# with human-corrected figures in the warehouse: the pooled ones drawn here are still the judge's
CARDS_PLOT_TITLE_JUDGE_ONLY = "Model cards (pooled EYT-Bench, judge only; SpeechEQ default)"


def model_cards_png(cards: pd.DataFrame, *, title: str = CARDS_PLOT_TITLE) -> bytes:
    """One row of panels per model: horizontal bars of every dimension on 0-1 with 95% whiskers."""
    from matplotlib.figure import Figure

    if cards is None or cards.empty:
        return _placeholder()
    n = len(cards)
    fig = Figure(figsize=(7.5, 2.9 * n + 0.4), dpi=DPI)
    for i, (_, card) in enumerate(cards.iterrows()):
        axes = card_axes(card)
        ax = fig.add_subplot(n, 1, i + 1)
        ys = list(range(len(axes)))[::-1]
        for y, (benchmark, _label, v, lo, hi) in zip(ys, axes):
            color = "C0" if benchmark == "EYT-Bench" else "C1"
            if not math.isnan(v):
                ax.barh(y, v, color=color, height=0.7)
                if not (math.isnan(lo) or math.isnan(hi)):
                    ax.plot([lo, hi], [y, y], color="0.2", linewidth=1)
        ax.set_yticks(ys, [f"{SHORT[b]}: {label}" for b, label, *_ in axes], fontsize=7)
        ax.set_xlim(0, 1)
        ax.axhline(len(SPEECH_AXES) - 0.5, color="0.6", linewidth=0.8)
        for has, middle, name in (
            (card.get("has_eyt_bench"), len(axes) - len(EYT_AXES) / 2 - 0.5, "EYT-Bench"),
            (card.get("has_speech_eq"), len(SPEECH_AXES) / 2 - 0.5, "SpeechEQ"),
        ):
            if not bool(has):
                ax.text(0.5, middle, f"{name}: not run", ha="center", va="center", fontsize=9, color="0.4")
        baseline = BASELINE_SUFFIX if bool(card.get("is_baseline")) else ""
        ax.set_title(f"{card['target']}{baseline}", fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _to_png(fig)
