"""The EYT-Bench leaderboard: one row per target x pool with the headline metrics (docs/eyt-metrics.md).

It aggregates the per-dialogue scores (eyt_dagster.eyt_bench.dialogue_scoring), so each metric has one definition;
sql/leaderboard.sql computes the same numbers from the raw rows as an independent check.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from eyt_dagster.core import result_cache
from eyt_dagster.core.baseline_flags import BASELINE_KIND, is_baseline
from eyt_dagster.core.errors import failures_line
from eyt_dagster.core.explained import Explained, Step, figure, sum_of
from eyt_dagster.core.provider_profiles import changes_condition, join_notes, split_notes
from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.dialogue_scoring import DIMENSIONS, LABELS, answered_turns
from eyt_dagster.eyt_bench.language_consistency import cell_language_consistency
from eyt_dagster.eyt_bench.settings import EytSlate
from eyt_dagster.eyt_bench.simulator_audit import flag_rates
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_TO_100
from eyt_dagster.eyt_bench.unfinished import error_rows

CELL = ["target", "pool"]
HEADLINE = [
    "explicit_acc",
    "latent_acc",
    "emotion_acc",
    "emotion_macro_f1",
    "drift",
    "ficr",
    "satisfaction",
    *DIMENSIONS,
    *(f"{d}_unweighted" for d in DIMENSIONS),
    "mean_turns",
]


def aggregate(scores: pd.DataFrame) -> dict[str, float]:
    """Headline metrics of one group of per-dialogue rows: pooled label accuracies and unweighted scores
    (sums over turns), dialogue means for drift, FICR, satisfaction and weighted scores (each `explained_metric`'s
    value). All missing (NaN) for no rows: a cell none of whose dialogues finished."""
    if scores.empty:
        return dict.fromkeys([h for h in HEADLINE if h != "emotion_macro_f1"], float("nan"))
    return {metric: explained_metric(scores, metric).number() for metric in AGGREGATED}


# What a missing per-dialogue value means, per column a mean reads (the dialogue finished, yet has no value).
WHY_MISSING = {
    "drift": "no intent similarity row (not embedded)",
    "completed": "no final verdict (every judge's call failed)",
    "satisfaction": "no final verdict (every judge's call failed)",
    **{
        d: "no turn verdict (every judge's call on every turn failed), or a sub-indicator left empty"
        for d in DIMENSIONS
    },
}
RATIOS = {
    **{
        f"{short}_acc": (
            f"{short}_correct",
            "n_turns",
            f"{short} intent hits" if short != "emotion" else "emotion hits",
        )
        for short in LABELS
    },
    **{f"{d}_unweighted": (f"{d}_sum", "n_judged_turns", f"{d} turn sums (0-5)") for d in DIMENSIONS},
}
MEANS = {
    "drift": ("drift", "intent drift"),
    "ficr": ("completed", "final intent completed (1 yes, 0 no)"),
    "satisfaction": ("satisfaction", "satisfaction (0-100)"),
    **{d: (d, f"{d} (Eq. 3, 0-100)") for d in DIMENSIONS},
    "mean_turns": ("n_turns", "turns"),
}


SHOWN = 8  # per-dialogue values an explanation writes out (the first and last four of a longer list)


def explained_metric(scores: pd.DataFrame, metric: str) -> Explained:
    """One headline metric of one cell (a key of RATIOS or MEANS) from its dialogue_scores rows, with the arithmetic:
    a pooled share sums per-dialogue numerators and denominators (over turns), a mean averages the dialogues that
    have a value; which dialogues were left out and why. `aggregate` stores its value."""
    n = len(scores)
    if metric in RATIOS:
        column, over, what = RATIOS[metric]
        tops, bottoms = scores[column], scores[over]
        top, bottom = tops.sum(), bottoms.sum()
        scale = DIMENSION_TO_100 if metric.endswith("_unweighted") else 1.0
        if scale == 1.0:
            value = top / bottom if bottom else float("nan")
            written = f"{figure(top)} / {figure(bottom)}"
        else:
            value = top / bottom * scale if bottom else float("nan")
            written = f"{figure(top)} / {figure(bottom)} x {figure(scale)}"
        unit = "answered turns" if over == "n_turns" else "judged turns"
        pooled = (
            Step(f"{what}, summed over the cell's {n} dialogue(s)", sum_of(tops.to_numpy(), SHOWN), top),
            Step(f"{unit}, summed over the same dialogues", sum_of(bottoms.to_numpy(), SHOWN), bottom),
            Step("pooled over turns" + (" on 0-100" if scale != 1.0 else ""), written, float(value)),
        )
        notes: tuple[str, ...] = (
            "pooled: every turn weighs the same, so a long dialogue counts more than a short one",
        )
        if over == "n_judged_turns" and (bottoms == 0).any():
            unjudged = int((bottoms == 0).sum())
            notes += (f"{unjudged} dialogue(s) have no judged turn: they add nothing to either sum",)
        return Explained(f"{metric}: pooled over the cell's turns", float(value), pooled, notes)
    column, what = MEANS[metric]
    values = scores[column].astype(float) if metric == "ficr" else scores[column]
    value = float(values.mean())
    numbers = values.to_numpy(dtype=float, na_value=np.nan)
    kept = numbers[~np.isnan(numbers)]
    left = n - len(kept)
    if metric == "ficr":
        done = int(kept.sum())
        said = f"completed in {done} of the {len(kept)} dialogue(s) with a final verdict"
        steps: tuple[Step, ...] = (Step(said, f"{done} / {len(kept)}", value),)
    else:
        total = float(kept.sum())
        steps = (
            Step(f"{what} of the {len(kept)} dialogue(s) with a value, summed", sum_of(kept, SHOWN), total),
            Step("mean over those dialogues", f"{figure(total)} / {len(kept)}", value),
        )
    notes = (f"{left} finished dialogue(s) left out: {WHY_MISSING.get(column, 'no value')}",) if left else ()
    return Explained(f"{metric}: mean over the cell's dialogues", value, steps, notes)


def _recorded(cell: pd.DataFrame, column: str, default: str) -> str:
    """The setting the cell's dialogue_scores rows were computed with (several if they differ)."""
    values = sorted(cell[column].dropna().unique()) if column in cell.columns else []
    return ", ".join(values) if values else default


def _role_costs(turns: pd.DataFrame, verdicts: pd.DataFrame, finals: pd.DataFrame) -> pd.DataFrame:
    """Tokens and cost per role and cell, error rows included (a failed call may still have cost)."""
    out = pd.DataFrame()
    for role, frames in (("simulator", [turns]), ("target", [turns]), ("judge", [verdicts, finals])):
        parts = []
        for frame in frames:
            part = frame[CELL].copy()
            part["tokens"] = frame[f"{role}_tokens_in"].fillna(0) + frame[f"{role}_tokens_out"].fillna(0)
            part["cost_usd"] = frame[f"{role}_cost_usd"].fillna(0)
            parts.append(part)
        summed = pd.concat(parts).groupby(CELL).sum().add_prefix(f"{role}_")
        out = summed if out.empty else out.join(summed, how="outer")
    return out.reset_index()


def reply_conditions(turns: pd.DataFrame) -> pd.DataFrame:
    """Per cell, how the target's replies came to be: `n_replies` (answered turns), `cut_replies` (text replies cut at
    max_tokens, used as they were), `adaptations` (every note of what the target's provider profile or refusals
    changed in its requests, sorted, each once) and `sampling_adapted` (one of them sent a sampling setting with
    another value than the slate's: a different experimental condition)."""
    columns = [*CELL, "n_replies", "cut_replies", "adaptations", "sampling_adapted"]
    answered = turns[turns["turn"].fillna(0) > 0] if len(turns) else turns
    if answered.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (target, pool), cell in answered.groupby(CELL, sort=False):
        cut = cell["target_cut_replies"] if "target_cut_replies" in cell.columns else pd.Series(dtype="Int64")
        noted = cell["target_adaptations"] if "target_adaptations" in cell.columns else pd.Series(dtype="string")
        notes = sorted({note for text in noted.dropna() for note in split_notes(str(text))})
        rows.append(
            {
                "target": target,
                "pool": pool,
                "n_replies": len(cell),
                "cut_replies": int(cut.fillna(0).sum()),
                "adaptations": join_notes(notes),
                "sampling_adapted": any(changes_condition(note) for note in notes),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def _cells(scores: pd.DataFrame, turns: pd.DataFrame) -> list[tuple[str, str]]:
    """Every target x pool with a scored dialogue or a dialogue_turns row (also one none of whose dialogues
    finished), in (pool, target) order."""
    found = {tuple(key) for frame in (scores, turns) if len(frame) for key in frame[CELL].drop_duplicates().values}
    return sorted(found, key=lambda cell: (cell[1], cell[0]))


def _by_cell(frame: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """Each target x pool's rows of `frame` (in their order), split once instead of filtered per cell."""
    if frame.empty:
        return {}
    return {tuple(key): rows for key, rows in frame.groupby(CELL, sort=False)}


# aggregate()'s metrics, in the order it returns them
AGGREGATED = [
    *(f"{short}_acc" for short in LABELS),
    "drift",
    "ficr",
    "satisfaction",
    *(m for d in DIMENSIONS for m in (d, f"{d}_unweighted")),
    "mean_turns",
]
# The per-dialogue columns aggregate() reads.
AGGREGATE_COLUMNS = (
    "n_turns",
    *(f"{short}_correct" for short in LABELS),
    "drift",
    "completed",
    "satisfaction",
    "n_judged_turns",
    *DIMENSIONS,
    *(f"{d}_sum" for d in DIMENSIONS),
)
AGGREGATE_KIND = "leaderboard.cell.v1"  # what a cell's stored headline metrics are computed by


def _aggregates(
    cells: list[tuple[str, str]], score_cells: dict[tuple[str, str], pd.DataFrame], store: result_cache.ResultStore
) -> dict[tuple[str, str], dict[str, float]]:
    """aggregate() of every cell's scores, through `store` (key: the cell's per-dialogue values, in row order)."""
    present = [c for c in cells if c in score_cells]
    columns = [c for c in AGGREGATE_COLUMNS if len(present) and c in score_cells[present[0]].columns]
    keys = [result_cache.content_key(tuple(columns), score_cells[c][columns].to_numpy(dtype=float)) for c in present]

    def compute(which: list[int]) -> list[np.ndarray]:
        return [np.array([aggregate(score_cells[present[k]])[h] for h in AGGREGATED]) for k in which]

    values = result_cache.cached_arrays(store, AGGREGATE_KIND, keys, (len(AGGREGATED),), compute)
    return {c: dict(zip(AGGREGATED, v.tolist())) for c, v in zip(present, values)}


def build_leaderboard(
    slate: EytSlate,
    scores: pd.DataFrame,
    turns: pd.DataFrame,
    verdicts: pd.DataFrame,
    finals: pd.DataFrame,
    audit: pd.DataFrame | None = None,
    store: result_cache.ResultStore | None = None,
    languages: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per target x pool present in `scores` or `turns`, with baseline and self-preference flags and
    costs, and the share of its dialogues the simulator audit (`audit`: dialogue.simulator_audit rows) flagged.
    A cell none of whose dialogues finished has a row too: n_dialogues 0, its metrics missing, n_errors and
    `failures` (the unfinished dialogues per role and kind) saying why. A cell's headline metrics depend on its
    own scores: with a `store` (core.result_cache) they are kept under a key of them and computed for new cells.
    Each row names the language its pool was played in and, from `languages` (dialogue.language_consistency rows),
    the cell's mean shares of replies and simulator turns in that language."""
    answered = answered_turns(turns)
    errors = error_rows(turns)
    targets = {t.id: t for t in slate.targets}
    score_cells, error_cells = _by_cell(scores), _by_cell(errors)
    f1 = metrics.explained_macro_f1_by(answered, CELL, "gold_emotion", "pred_emotion") if len(answered) else {}
    cells = _cells(scores, turns)
    aggregates = _aggregates(cells, score_cells, store if store is not None else result_cache.MemoryStore())
    rows = []
    for target, pool in cells:
        cell = score_cells.get((target, pool), scores.iloc[0:0])
        cell_errors = error_cells.get((target, pool), errors.iloc[0:0])
        ref = targets.get(target)
        row = {
            "target": target,
            "pool": pool,
            "language": slate.pool_language(pool) if pool in slate.pools else None,
            "family": ref.family if ref else None,
            "thinking": bool(ref.thinking) if ref else None,
            "is_baseline": is_baseline(slate, target),
            "target_kind": BASELINE_KIND if is_baseline(slate, target) else "model",
            "in_slate": ref is not None,
            "self_preference_risk": bool(ref and slate.self_preference_risk(target)),
            "judges": ", ".join(j.id for j in slate.judges),
            "judge_combine": _recorded(cell, "judge_combine", slate.judge_combine),
            "n_dialogues": len(cell),
            "n_errors": len(cell_errors),
            "failures": failures_line(cell_errors) or None,
            **(aggregates[(target, pool)] if (target, pool) in aggregates else aggregate(cell)),
            "emotion_macro_f1": f1[(target, pool)].number() if (target, pool) in f1 else float("nan"),
        }
        rows.append(row)
    board = pd.DataFrame(rows)
    if board.empty:
        return board
    board = board.merge(_role_costs(turns, verdicts, finals), on=CELL, how="left")
    board = board.merge(reply_conditions(turns).drop(columns="n_replies"), on=CELL, how="left")
    board["cut_replies"] = pd.to_numeric(board["cut_replies"]).fillna(0).astype("int64")
    board["sampling_adapted"] = board["sampling_adapted"].astype("boolean").fillna(False).astype(bool)
    rates = flag_rates(audit) if audit is not None else pd.DataFrame(columns=[*CELL, "simulator_flag_rate"])
    board = board.merge(rates, on=CELL, how="left")
    shares = (
        cell_language_consistency(languages)[[*CELL, "reply_language_share", "user_language_share"]]
        if languages is not None and len(languages)
        else pd.DataFrame(columns=[*CELL, "reply_language_share", "user_language_share"])
    )
    board = board.merge(shares, on=CELL, how="left")
    board["alpha"] = slate.alpha
    board["slate"] = slate.name
    return board.sort_values(["pool", "target"]).reset_index(drop=True)
