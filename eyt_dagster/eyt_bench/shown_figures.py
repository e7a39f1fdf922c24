"""Which figure a page shows for a judge-made headline number of a leaderboard cell, and how it says so: one place
for the marker, its words and the legend, used by the HTML report, the model cards and the explorer.

`dialogue.judge_corrected` (one row per target x pool x metric) holds, per cell and judge-made metric, the figure
to display (`shown_mean`, `shown_low`, `shown_high`) and which one it is (`shown`: "corrected" when the cell has
enough human-labelled dialogues for the prediction-powered estimate, else "judge only"). Here:

- `figures(table)`: those rows as ShownFigure per (target, pool, metric); empty when the warehouse has no such
  table (an older warehouse), and then every page shows what it showed before, with no marker and no legend;
- `marker(figure, among)`: CORRECTED_MARK "h" on a corrected figure, JUDGE_MARK "j" on a judge-only one in a table
  that also has corrected ones; a ShownFigure's `title` is the words behind the marker, for a tooltip;
- `legend(figures)`: the sentence that goes with a table of them, and `header_note(figures)`: " (judge only)" for
  the column headers of a table where no figure is corrected (then no number carries a marker).

A table that mixes both marks every judge-made number (h or j); a table of corrected figures only marks each with
h; a table of judge-only figures only marks none and says "judge only" in its headers and legend.
Pure: no warehouse, no HTML.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from eyt_dagster.core.prediction_powered import two_sided_z

# The judge-made headline metrics, as the leaderboard names them (and judge_corrected's `metric` values).
JUDGE_MADE: tuple[str, ...] = ("empathy", "persona", "anthropomorphic", "ficr", "satisfaction")
CORRECTED = "corrected"
JUDGE_ONLY = "judge only"
CORRECTED_MARK = "h"  # corrected with human labels
JUDGE_MARK = "j"  # the judge's alone
METHOD = "prediction-powered, docs/eyt-metrics.md"
HOW_TO_LABEL = "eyt annotate export"
TABLE = "dialogue.judge_corrected"


@dataclass(frozen=True)
class ShownFigure:
    """A cell's judge-made number as a page shows it: the value and 95% interval of the figure shown."""

    value: float
    low: float
    high: float
    shown: str  # CORRECTED or JUDGE_ONLY
    n_labelled: int
    why: str  # why the judge's figure is shown (empty when corrected)
    judge_value: float = math.nan
    judge_low: float = math.nan
    judge_high: float = math.nan
    se: float = math.nan  # the corrected estimate's standard error (NaN for a judge-only figure)
    n_dialogues: int = 0  # the cell's dialogues with a judge value: its weight when pools are pooled

    @property
    def corrected(self) -> bool:
        return self.shown == CORRECTED

    @property
    def title(self) -> str:
        """What the marker means for this number, in a sentence."""
        if self.corrected:
            return corrected_words(self.n_labelled)
        return f"{JUDGE_ONLY}: {self.why}" if self.why else JUDGE_ONLY


def corrected_words(n_labelled: int | str) -> str:
    return f"corrected with {n_labelled} human-labelled dialogues ({METHOD})"


def _float(value: Any) -> float:
    return math.nan if value is None or pd.isna(value) else float(value)


def figures(table: pd.DataFrame | None) -> dict[tuple[str, str, str], ShownFigure]:
    """judge_corrected's rows by (target, pool, metric); empty when there is no such table or it has no rows."""
    if table is None or table.empty or not {"target", "pool", "metric", "shown", "shown_mean"} <= set(table.columns):
        return {}
    out = {}
    for r in table.to_dict("records"):
        n = r.get("n_labelled")
        out[(str(r["target"]), str(r["pool"]), str(r["metric"]))] = ShownFigure(
            value=_float(r["shown_mean"]),
            low=_float(r.get("shown_low")),
            high=_float(r.get("shown_high")),
            shown=str(r["shown"]),
            n_labelled=0 if n is None or pd.isna(n) else int(n),
            why="" if r.get("why") is None or pd.isna(r.get("why")) else str(r["why"]),
            judge_value=_float(r.get("judge_mean")),
            judge_low=_float(r.get("judge_low")),
            judge_high=_float(r.get("judge_high")),
            se=_float(r.get("corrected_se")) if str(r["shown"]) == CORRECTED else math.nan,
            n_dialogues=0 if pd.isna(r.get("n_dialogues", math.nan)) else int(r["n_dialogues"]),
        )
    return out


def pooled(cells: Sequence[ShownFigure]) -> ShownFigure | None:
    """A target's corrected figure over all its pools together, as the model cards pool a metric (every dialogue of
    every pool in one mean, so each pool weighs by its dialogues): None unless there are cells and every one is
    corrected. The value is the sum of w x value with w = n_dialogues / total dialogues. The cells' estimates are
    independent of each other (other ChatSEEDs, separately labelled dialogues), so the standard error is
    sqrt(sum of w^2 x se^2) and the 95% interval value +/- 1.959964 se, the cells' own central-limit intervals
    combined."""
    if not cells or not all(c.corrected and c.n_dialogues > 0 for c in cells):
        return None
    total = sum(c.n_dialogues for c in cells)
    weights = [c.n_dialogues / total for c in cells]
    value = sum(w * c.value for w, c in zip(weights, cells, strict=True))
    se = math.sqrt(sum((w * c.se) ** 2 for w, c in zip(weights, cells, strict=True)))
    z = two_sided_z(0.95)
    judge = sum(w * c.judge_value for w, c in zip(weights, cells, strict=True))
    return ShownFigure(
        value=value,
        low=value - z * se,
        high=value + z * se,
        shown=CORRECTED,
        n_labelled=sum(c.n_labelled for c in cells),
        why="",
        judge_value=judge,
        se=se,
        n_dialogues=total,
    )


def _counts(found: list[ShownFigure]) -> str:
    ns = sorted({f.n_labelled for f in found if f.corrected})
    return str(ns[0]) if len(ns) == 1 else f"{ns[0]} to {ns[-1]}"


def marker(figure: ShownFigure | None, among: Iterable[ShownFigure]) -> str:
    """The marker `figure` carries in a table of `among`: h on a corrected figure, j on a judge-only one when the
    table also has corrected ones, nothing otherwise."""
    if figure is None:
        return ""
    if figure.corrected:
        return CORRECTED_MARK
    return JUDGE_MARK if any(f.corrected for f in among) else ""


def header_note(found: Iterable[ShownFigure]) -> str:
    """' (judge only)' for the judge-made columns' headers when the table has figures and none is corrected."""
    found = list(found)
    return f" ({JUDGE_ONLY})" if found and not any(f.corrected for f in found) else ""


def legend(found: Iterable[ShownFigure]) -> str:
    """The sentence under a table of judge-made figures (empty when there are none: an older warehouse)."""
    found = list(found)
    if not found:
        return ""
    names = "Empathy, Persona, Anthropomorphic, FICR and satisfaction"
    corrected = [f for f in found if f.corrected]
    if not corrected:
        return (
            f"{names} are {JUDGE_ONLY}: no cell has enough human-labelled dialogues to correct the judge's figure "
            f"(draw a sample for people to label with `{HOW_TO_LABEL}`)."
        )
    said = f"{CORRECTED_MARK}: {corrected_words(_counts(corrected))}; its interval is the corrected estimate's."
    if len(corrected) < len(found):
        said += f" {JUDGE_MARK}: {JUDGE_ONLY}, the cell has too few human-labelled dialogues."
    return f"{names}: {said}"


def paper_note(found: Iterable[ShownFigure]) -> str:
    """The paper tables' footnote line: they keep the judge's figures (the papers' layout and numbers), and say
    where the corrected ones are; empty when there are no figures (an older warehouse)."""
    found = list(found)
    if not found:
        return ""
    said = (
        "Empathy, Persona, Anthropomorphic, FICR and satisfaction are the judge's alone (judge only), as in the papers"
    )
    corrected = sum(f.corrected for f in found)
    if not corrected:
        return f"{said}; no cell has enough human-labelled dialogues to correct them (`{HOW_TO_LABEL}`)."
    return (
        f"{said}; {corrected} of {len(found)} cell x metric figures are also corrected with human labels "
        f"({METHOD}): {TABLE} and the Leaderboard of `eyt report` show them."
    )
