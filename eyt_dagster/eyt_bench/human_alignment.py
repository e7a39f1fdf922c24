"""Judge-human alignment (paper Table 15, App. L): the judge's per-turn dimension scores against human
annotations of the same turns. Pure functions over pandas frames; reading the CSV is the only I/O.

Annotation CSV format (one row per annotator x turn x dimension, header required, extra columns ignored):

    annotator,target,pool,seed_id,turn,dimension,score
    ann1,reflective-baseline,nemotron_usa,nemotron_usa:0001,1,empathy,3.5

- annotator, target, pool, seed_id: non-empty text; turn: integer >= 1 (the dialogue's turn number).
- dimension: one of empathy, persona, anthropomorphic (taxonomy.DIMENSION_NAMES).
- score: the judge's dimension scale, 0-5 = the sum of five sub-indicators, on the half-point grid
  (0, 0.5, ..., 5). An empty score means "not scored": the row is kept with NaN and counted as missing.
- The whole dialogue's fields may be given too (annotation_sheet.DIALOGUE_FIELDS): dimension completed (score 0 or
  1) or satisfaction (an integer 1-5), at turn 0 (annotation_sheet.DIALOGUE_TURN). Table 15 leaves them out.
- A (annotator, target, pool, seed_id, turn, dimension) key appears at most once.

A turn-cell is (target, pool, seed_id, turn). Buckets on 0-5: Low < 2 <= Mid < 3.5 <= High, i.e. on the
grid Low = 0-1.5, Mid = 2-3, High = 3.5-5 (four, three and four grid points; a human mean between grid
points falls by the same edges). The judge may score off the grid (an ensemble mean); for kappa its score
is rounded to the nearest half point, halves upwards.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from eyt_dagster.core import result_cache, stats
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.annotation_sheet import DIALOGUE_FIELDS, DIALOGUE_TURN, SCALES, allowed
from eyt_dagster.eyt_bench.table_contracts import HUMAN_ALIGNMENT_COLUMNS, HUMAN_ANNOTATIONS_COLUMNS
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_NAMES, DIMENSION_TO_100

KEYS = ["target", "pool", "seed_id", "turn"]
# the CSV's columns: the human_annotations table's, without what the asset adds (assets/eyt_bench/judge_calibration.py)
ANNOTATION_COLUMNS = column_names(HUMAN_ANNOTATIONS_COLUMNS, without=("sheet", "source_file", "created_at"))
DIMENSIONS: tuple[str, ...] = tuple(DIMENSION_NAMES.values())
SCORE_MIN, SCORE_MAX = 0.0, 5.0
GRID: tuple[float, ...] = tuple(i / 2 for i in range(11))  # 0, 0.5, ..., 5: kappa and alpha categories
BUCKET_EDGES: tuple[float, float] = (2.0, 3.5)  # Low < 2.0 <= Mid < 3.5 <= High
WITHIN_TOLERANCE = 1.0  # |judge - human mean| <= 1 rating point
EARLY_LAST_TURN = 2  # lenience_early: turns <= 2; lenience_late: turns >= 3 (the warm-up split)
_EPS = 1e-9


def _fail(path: Path | str, lines: pd.Index, problem: str) -> None:
    shown = ", ".join(str(n) for n in list(lines)[:20]) + (" ..." if len(lines) > 20 else "")
    raise ValueError(f"{path}: line(s) {shown}: {problem}")


def read_annotations(path: Path | str) -> pd.DataFrame:
    """Read and validate an annotation CSV (module docstring). Errors name the file, the file's line
    numbers (header = line 1) and the problem. Empty scores stay as NaN rows."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ANNOTATION_COLUMNS if c not in raw.columns]
    if missing:
        expected = ", ".join(ANNOTATION_COLUMNS)
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; expected {expected}")
    df = raw[ANNOTATION_COLUMNS].apply(lambda s: s.str.strip())
    df.index = pd.RangeIndex(2, len(df) + 2)  # file line numbers
    for col in ["annotator", "target", "pool", "seed_id", "turn", "dimension"]:
        if (df[col] == "").any():
            _fail(path, df.index[df[col] == ""], f"empty {col}")
    turn = pd.to_numeric(df["turn"], errors="coerce")
    whole = df["dimension"].isin(DIALOGUE_FIELDS)  # the whole dialogue's fields, at turn 0
    bad = ~whole & (turn.isna() | (turn < 1) | (turn % 1 != 0))
    if bad.any():
        _fail(path, df.index[bad], "turn must be an integer >= 1")
    bad = whole & (turn != DIALOGUE_TURN)
    if bad.any():
        _fail(
            path,
            df.index[bad],
            f"turn must be {DIALOGUE_TURN} for {' and '.join(DIALOGUE_FIELDS)} (the whole dialogue)",
        )
    unknown = ~df["dimension"].isin(DIMENSIONS) & ~whole
    if unknown.any():
        expected = ", ".join((*DIMENSIONS, *DIALOGUE_FIELDS))
        _fail(
            path,
            df.index[unknown],
            f"unknown dimension {sorted(set(df.loc[unknown, 'dimension']))}; expected one of {expected}",
        )
    empty = df["score"] == ""
    score = pd.to_numeric(df["score"].where(~empty), errors="coerce")
    if (score.isna() & ~empty).any():
        _fail(path, df.index[score.isna() & ~empty], "score is not a number")
    for name in DIALOGUE_FIELDS:
        off = (df["dimension"] == name) & score.notna() & ~score.map(lambda v, f=name: allowed(f, float(v)))
        if off.any():
            _fail(path, df.index[off], f"{name} score off its scale: {SCALES[name]}")
    outside = ~whole & ((score < SCORE_MIN) | (score > SCORE_MAX))
    if outside.any():
        _fail(path, df.index[outside], f"score outside {SCORE_MIN:g}-{SCORE_MAX:g}")
    off_grid = ~whole & score.notna() & ((score * 2) % 1 != 0)
    if off_grid.any():
        _fail(path, df.index[off_grid], "score is not on the half-point grid (0, 0.5, ..., 5)")
    out = df.assign(turn=turn.astype(int), score=score.astype(float))
    dup = out.duplicated(["annotator", *KEYS, "dimension"], keep=False)
    if dup.any():
        _fail(path, out.index[dup], "duplicate annotator x turn x dimension")
    return out.reset_index(drop=True)


def score_bucket(scores: pd.Series | np.ndarray) -> np.ndarray:
    """0 = Low, 1 = Mid, 2 = High by BUCKET_EDGES (left edge inclusive)."""
    return np.digitize(np.asarray(scores, dtype=float), BUCKET_EDGES, right=False)


def _to_grid(scores: pd.Series) -> pd.Series:
    """Nearest half point, halves upwards (np.floor(2x + 0.5) / 2)."""
    return np.floor(scores.astype(float) * 2 + 0.5 + _EPS) / 2


def _mean_pairwise_kappa(wide: pd.DataFrame, pairs: list[tuple[str, str]]) -> float:
    kappas = [stats.quadratic_weighted_kappa(wide[a], wide[b], GRID) for a, b in pairs]
    kappas = [k for k in kappas if not np.isnan(k)]
    return float(np.mean(kappas)) if kappas else float("nan")


def annotator_scores(ann: pd.DataFrame) -> pd.DataFrame:
    """One dimension's scored annotations as human cells x annotators (index KEYS; a cell an annotator left
    unscored is NaN)."""
    scored = ann[ann["score"].notna()]
    return scored.pivot(index=KEYS, columns="annotator", values="score")


def human_means(annotations: pd.DataFrame) -> pd.DataFrame:
    """Per turn-cell, each dimension's human score: the mean over the annotators who scored it (what the judge is
    compared with); index KEYS, one column per dimension, NaN where no annotator scored that dimension."""
    ann = annotations.astype({"turn": int, "seed_id": str})
    means = {d: annotator_scores(ann[ann["dimension"] == d]).mean(axis=1) for d in DIMENSIONS}
    index = (
        pd.MultiIndex.from_frame(ann[KEYS].drop_duplicates()) if len(ann) else pd.MultiIndex.from_tuples([], names=KEYS)
    )
    return pd.DataFrame({d: m.reindex(index) for d, m in means.items()}, index=index)


def _dimension_row(ann: pd.DataFrame, judge: pd.Series) -> dict[str, float | int]:
    scored = ann[ann["score"].notna()]
    wide = annotator_scores(ann)  # human cells x annotators
    h_mean = wide.mean(axis=1)
    j = judge.reindex(wide.index)
    has_judge = j.notna()
    h, jj = h_mean[has_judge], j[has_judge]
    diff = jj - h
    turns = diff.index.get_level_values("turn")
    early, late = diff[turns <= EARLY_LAST_TURN], diff[turns > EARLY_LAST_TURN]
    annotators = list(wide.columns)
    with_judge = wide.assign(__judge=_to_grid(j))
    n = int(has_judge.sum())
    row: dict[str, float | int] = {
        "n_cells": n,
        "n_annotations": len(scored),
        "n_missing": int(ann["score"].isna().sum() + (~has_judge).sum()),
        "pearson_r": stats.pearson_r(jj, h),
        "spearman_rho": stats.spearman_rho(jj, h),
        "bias_0_100": float(diff.mean() * DIMENSION_TO_100) if n else float("nan"),
        "qwk_judge_human": _mean_pairwise_kappa(with_judge, [("__judge", a) for a in annotators]),
        "qwk_human_human": _mean_pairwise_kappa(wide, list(combinations(annotators, 2))),
        "krippendorff_alpha_ordinal": stats.krippendorff_alpha(
            (wide.T.to_numpy() * 2), "ordinal", value_domain=[2 * g for g in GRID]
        ),
        "within_1": float((diff.abs() <= WITHIN_TOLERANCE + _EPS).mean()) if n else float("nan"),
        "same_bucket": float((score_bucket(jj) == score_bucket(h)).mean()) if n else float("nan"),
        "lenience_early": float(early.mean() * DIMENSION_TO_100) if len(early) else float("nan"),
        "lenience_late": float(late.mean() * DIMENSION_TO_100) if len(late) else float("nan"),
    }
    row["lenience_late_minus_early"] = row["lenience_late"] - row["lenience_early"]
    return row


TABLE_KIND = "human_alignment.table.v1"  # what a stored alignment table is computed by
COUNT_COLUMNS = ("n_cells", "n_annotations", "n_missing")


def alignment_table(
    annotations: pd.DataFrame, judge_scores: pd.DataFrame, store: result_cache.ResultStore | None = None
) -> pd.DataFrame:
    """Table 15: one row per dimension, the judge's per-turn scores (0-5, one row per turn-cell) against
    the human mean per cell and against each annotator. Biases and lenience are on 0-100 (x20);
    lenience_early / _late split at turn 2; human-human kappa and alpha use every human cell, judge-human
    figures the cells that also have a judge score (n_cells).

    The table depends on the annotations and the judge's scores of the annotated turn-cells alone, so with a
    `store` (core.result_cache) it is kept under a key of exactly those (and the versions of scipy and
    scikit-learn, whose Pearson r and kappa it uses): a run whose annotations and annotated verdicts are as before
    reads it, without importing either library."""
    need = [*KEYS, *DIMENSIONS]
    missing = [c for c in need if c not in judge_scores.columns]
    if missing:
        raise ValueError(f"judge_scores lacks column(s) {', '.join(missing)}")
    judge = judge_scores[need].astype({"turn": int, "seed_id": str}).set_index(KEYS)
    if judge.index.duplicated().any():
        raise ValueError("judge_scores has more than one row for a turn-cell; combine the judges first")
    ann = annotations.astype({"turn": int, "seed_id": str})
    if store is None:
        return _alignment_rows(ann, judge)
    key = _table_key(ann, judge)
    found = store.get_many(TABLE_KIND, [key])
    counters = getattr(store, "counters", None)
    if key in found:
        values = result_cache.decode(found[key], None).reshape(len(DIMENSIONS), -1)
        if isinstance(counters, result_cache.CacheCounters):
            counters.count(TABLE_KIND, 1, 0)
        return _from_values(values)
    table = _alignment_rows(ann, judge)
    numbers = table.drop(columns="dimension").to_numpy(dtype=float)
    if list(table["dimension"]) == list(DIMENSIONS) and list(table.columns[1:]) == list(ALIGNMENT_COLUMNS):
        store.put_many(TABLE_KIND, {key: result_cache.encode(numbers)})
    if isinstance(counters, result_cache.CacheCounters):
        counters.count(TABLE_KIND, 0, 1)
    return table


# after "dimension", in _dimension_row's order: the human_alignment table's figures (its contract, without what the
# asset adds)
ALIGNMENT_COLUMNS = tuple(column_names(HUMAN_ALIGNMENT_COLUMNS, without=("dimension", "judges", "created_at")))


def _alignment_rows(ann: pd.DataFrame, judge: pd.DataFrame) -> pd.DataFrame:
    rows = [{"dimension": d, **_dimension_row(ann[ann["dimension"] == d], judge[d])} for d in DIMENSIONS]
    return pd.DataFrame(rows)


def _table_key(ann: pd.DataFrame, judge: pd.DataFrame) -> str:
    """The annotations (every column the table reads, in row order) and the judge's scores of their turn-cells."""
    from importlib.metadata import version

    cells = pd.MultiIndex.from_frame(ann[KEYS])
    at = judge.reindex(cells)[list(DIMENSIONS)].to_numpy(dtype=float)
    text = tuple(tuple(ann[c].astype(str)) for c in ("annotator", "target", "pool", "seed_id", "dimension"))
    return result_cache.content_key(
        TABLE_KIND,
        version("scipy"),
        version("scikit-learn"),
        text,
        ann["turn"].to_numpy(dtype=np.int64),
        ann["score"].to_numpy(dtype=float),
        at,
    )


def _from_values(values: np.ndarray) -> pd.DataFrame:
    table = pd.DataFrame(values, columns=list(ALIGNMENT_COLUMNS))
    table = table.astype({c: "int64" for c in COUNT_COLUMNS})
    table.insert(0, "dimension", list(DIMENSIONS))
    return table
