"""Targets side by side on one ChatSEED: per turn each target's predicted labels (right or wrong against its own
gold labels), reply and the judges' combined sub-scores, with the rows where the targets differ marked. The
judges are combined as the benchmark combines them (per sub-indicator, by the dialogue's `judge_combine`, error
rows left out; docs/eyt-metrics.md), then summed into the three dimensions (0-5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from eyt_dagster.explorer.queries import LABELS, Dialogue
from eyt_dagster.explorer.queries import dialogues as read_dialogues
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.eyt_bench.metrics import combine_judges, dimension_sums
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_NAMES, DIMENSION_TO_100, SUBSCORE_COLUMNS

# Two targets' scores count as apart when they differ by more than this: one point of a dimension's 0-5 sum (20 on
# the 0-100 headline scale), and a quarter point of a sub-indicator's 0-1 scale (half a step of the three-point one).
DIMENSION_GAP = 1.0
SUBSCORE_GAP = 0.25
HEADLINE_GAP = DIMENSION_GAP * DIMENSION_TO_100
DIMENSIONS = tuple(DIMENSION_NAMES.values())
# The dialogue_scores columns of the comparison's summary, each with the gap that marks it (None: any difference);
# each is written in its column's format (formats.COLUMN_SCALES).
SUMMARY: dict[str, float | None] = {
    "completed": None,
    "satisfaction": HEADLINE_GAP,
    "empathy": HEADLINE_GAP,
    "persona": HEADLINE_GAP,
    "anthropomorphic": HEADLINE_GAP,
    "drift": None,
    "n_turns": None,
}


@dataclass(frozen=True)
class Row:
    """One line of a comparison: a name and one cell per target (None where that target has no value)."""

    name: str
    kind: str  # "label": cells are (predicted, gold, right); "text": a text; "score": a number
    cells: list[Any]
    differ: bool
    scale: str = ""  # how a number is written (explorer/formats.py): a scale or the column's name


@dataclass(frozen=True)
class Comparison:
    seed_id: str
    pool: str
    seed: dict[str, Any] | None  # the chat_seeds row (the same for every target: one pool)
    dialogues: list[Dialogue]  # in the order the targets were asked for
    summary: list[Row]
    turns: list[tuple[int, list[Row]]]


def compare(wh: Warehouse, seed_id: str, targets: list[str]) -> Comparison:
    """The dialogues of `targets` on `seed_id`. KeyError naming a target that has no dialogue of this seed;
    ValueError when the dialogues are from different pools."""
    found = read_dialogues(wh, targets, seed_id)
    missing = [t for t in targets if t not in found]
    if missing:
        raise KeyError(missing[0])
    dialogues = [found[t] for t in targets]
    pools = {d.pool for d in dialogues}
    if len(pools) > 1:
        raise ValueError(f"the dialogues of ChatSEED '{seed_id}' are from different pools: {', '.join(sorted(pools))}")
    summary = [
        _score_row(name, [None if d.scores is None else d.scores.get(name) for d in dialogues], gap, name)
        for name, gap in SUMMARY.items()
    ]
    combined = [combined_scores(d) for d in dialogues]
    by_turn = [{int(t["turn"]): t for t in d.turns} for d in dialogues]
    numbers = sorted({n for turns in by_turn for n in turns})
    turns = []
    for n in numbers:
        here = [turns.get(n) for turns in by_turn]
        rows = [_text_row("user (simulator)", [None if t is None else t["user_text"] for t in here])]
        for f in LABELS:
            rows.append(
                _label_row(
                    f,
                    [
                        None if t is None else (t[f"pred_{f}"], t[f"gold_{f}"], t[f"pred_{f}"] == t[f"gold_{f}"])
                        for t in here
                    ],
                )
            )
        rows.append(_text_row("reply", [None if t is None else t["response_text"] for t in here]))
        scores = [c.get(n, {}) for c in combined]
        rows += [
            _score_row(f"{dim} (0-5)", [s.get(dim) for s in scores], DIMENSION_GAP, "rating") for dim in DIMENSIONS
        ]
        rows += [_score_row(sub, [s.get(sub) for s in scores], SUBSCORE_GAP, "rate") for sub in SUBSCORE_COLUMNS]
        turns.append((n, rows))
    first = dialogues[0]
    return Comparison(seed_id, first.pool, first.seed, dialogues, summary, turns)


def combined_scores(d: Dialogue) -> dict[int, dict[str, float]]:
    """turn -> each sub-indicator combined over the judges that answered, and each dimension's sum (0-5)."""
    ok = [v for t in d.turns for v in t["verdicts"] if v.get("error") is None]
    if not ok:
        return {}
    how = str((d.scores or {}).get("judge_combine") or "mean")
    verdicts = pd.DataFrame(ok)[["target", "pool", "seed_id", "turn", *SUBSCORE_COLUMNS]]
    subs = combine_judges(verdicts, how)
    dims = dimension_sums(subs)
    out: dict[int, dict[str, float]] = {}
    for s, dsum in zip(subs.to_dict("records"), dims.to_dict("records")):
        out[int(s["turn"])] = {**{c: s[c] for c in SUBSCORE_COLUMNS}, **{dim: dsum[dim] for dim in DIMENSIONS}}
    return out


def _present(cells: list[Any]) -> list[Any]:
    return [c for c in cells if c is not None and not (isinstance(c, float) and pd.isna(c))]


def _score_row(name: str, cells: list[Any], gap: float | None, scale: str) -> Row:
    values = _present(cells)
    if gap is None:
        differ = len({str(v) for v in values}) > 1
    else:
        numbers = [float(v) for v in values]
        differ = bool(numbers) and max(numbers) - min(numbers) > gap
    return Row(name, "score", cells, differ, scale)


def _label_row(name: str, cells: list[tuple[Any, Any, bool] | None]) -> Row:
    verdicts = {bool(c[2]) for c in cells if c is not None}
    return Row(name, "label", cells, len(verdicts) > 1)


def _text_row(name: str, cells: list[Any]) -> Row:
    return Row(name, "text", cells, False)
