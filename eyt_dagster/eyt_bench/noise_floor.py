"""The noise floor of every metric (docs/eyt-metrics.md#the-noise-floor): how much of a cell's spread comes from the
ChatSEEDs, how much from the target's sampling and how much from the judge's, and how consistent a target is over
repeated plays (pass^k).

The samples are one value per (ChatSEED s, repeat r, judge repeat q): dialogue_scores is sample (0, 0) and
repeat_scores holds the others. The model is the nested one-way design y_srq = mu + a_s + b_sr + e_srq, with
a_s the ChatSEED (between), b_sr the target's sampling within a ChatSEED (within) and e_srq the judge's sampling.
Its variance components come from the ANOVA mean squares (method of moments, each clipped at 0), on the ChatSEEDs
that have every one of the R x Q samples with a value (a balanced design; `n_seeds` says how many):

    MS_judge = sum (y_srq - ybar_sr)^2 / (S R (Q-1))           sigma2_judge = MS_judge
    MS_rep   = Q sum (ybar_sr - ybar_s)^2 / (S (R-1))          sigma2_within = (MS_rep - MS_judge) / Q
    MS_seed  = R Q sum (ybar_s - ybar)^2 / (S-1)               sigma2_between = (MS_seed - MS_rep) / (R Q)

A component the slate did not sample (R = 1: within; Q = 1: judge) is missing, not zero: its share of the spread
is then inside the component above it. Pure logic, no I/O.
"""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd

from eyt_dagster.core import result_cache
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench import table_contracts
from eyt_dagster.eyt_bench.analysis import per_dialogue
from eyt_dagster.eyt_bench.taxonomy import PAIRED_METRICS

CELL = ["target", "pool"]
SAMPLE = ["seed_id", "repeat", "judge_repeat"]
# The tables' columns as their contracts (table_contracts.py) order them, without what the asset adds (the baseline
# flags and created_at: assets/eyt_bench/noise_floor.py).
_ADDED = ("is_baseline", "self_preference_risk", "created_at")
COLUMNS = column_names(table_contracts.NOISE_FLOOR_COLUMNS, without=_ADDED)
PASS_K_COLUMNS = column_names(table_contracts.PASS_K_COLUMNS, without=_ADDED)
# What a cell's stored noise-floor figures and pass^k values are computed by (core.result_cache): a change to how
# either is computed must change its kind.
NOISE_KIND = "noise_floor.cell.v1"
PASS_K_KIND = "pass_k.cell.v1"
_FIGURES = COLUMNS[5:]  # n_seeds .. rerun_sd: what _row returns


def all_samples(dialogue_scores: pd.DataFrame, repeat_scores: pd.DataFrame) -> pd.DataFrame:
    """Every sample of every cell: the cells' own scores as sample (0, 0), then the repeated ones."""
    own = dialogue_scores.assign(repeat=0, judge_repeat=0)
    if not len(repeat_scores):
        return own
    return pd.concat([own, repeat_scores[[c for c in repeat_scores.columns if c in own.columns]]], ignore_index=True)


def components(y: np.ndarray) -> dict[str, float]:
    """The variance components of a balanced S x R x Q array (no missing value), as in the module's docstring."""
    s, r, q = y.shape
    nan = float("nan")
    ybar_sr = y.mean(axis=2)
    ybar_s = ybar_sr.mean(axis=1)
    ms_judge = float(((y - ybar_sr[:, :, None]) ** 2).sum() / (s * r * (q - 1))) if q > 1 else nan
    ms_rep = float(q * ((ybar_sr - ybar_s[:, None]) ** 2).sum() / (s * (r - 1))) if r > 1 else nan
    ms_seed = float(r * q * ((ybar_s - ybar_s.mean()) ** 2).sum() / (s - 1)) if s > 1 else nan
    judge = ms_judge
    within = max(0.0, (ms_rep - (ms_judge if q > 1 else 0.0)) / q) if r > 1 else nan
    below = ms_rep if r > 1 else (ms_judge if q > 1 else 0.0)
    between = max(0.0, (ms_seed - below) / (r * q)) if s > 1 else nan
    return {"between": between, "within": within, "judge": judge}


def _row(values: pd.DataFrame, repeats: int, judge_repeats: int) -> dict[str, float]:
    """One cell and metric: values indexed by SAMPLE, balanced on the ChatSEEDs with every sample."""
    grid = values.unstack(["repeat", "judge_repeat"])
    wanted = pd.MultiIndex.from_product([range(repeats), range(judge_repeats)], names=["repeat", "judge_repeat"])
    grid = grid.reindex(columns=wanted).dropna()
    n = len(grid)
    out: dict[str, float] = {"n_seeds": n, "mean": float(grid.to_numpy().mean()) if n else float("nan")}
    var = components(grid.to_numpy().reshape(n, repeats, judge_repeats)) if n else {}
    known = [v for v in var.values() if not np.isnan(v)]
    total = sum(known)
    for part in ("between", "within", "judge"):
        v = var.get(part, float("nan"))
        out[f"sd_{part}"] = float(np.sqrt(v)) if not np.isnan(v) else float("nan")
        out[f"share_{part}"] = v / total if total > 0 and not np.isnan(v) else float("nan")
    if repeats > 1 and n:
        per_repeat = grid.to_numpy().reshape(n, repeats, judge_repeats).mean(axis=2)
        out["spread"] = float(per_repeat.std(axis=1, ddof=1).mean())
    else:
        out["spread"] = float("nan")
    # one play and one verdict per ChatSEED, as the leaderboard has them: how far the cell's mean moves when the
    # benchmark is run again on the same ChatSEEDs
    rerun = [var.get(p, float("nan")) for p in ("within", "judge")]
    rerun_known = [v for v in rerun if not np.isnan(v)]
    out["rerun_sd"] = float(np.sqrt(sum(rerun_known) / n)) if n and rerun_known else float("nan")
    return out


def _cell_rows(samples: pd.DataFrame) -> list[tuple[tuple[object, object], np.ndarray]]:
    """Each target x pool cell of `samples` (sorted, as groupby sorts them) with the positions of its rows."""
    return sorted(samples.groupby(CELL, sort=True).indices.items())


def _sample_key(cell: pd.DataFrame) -> tuple[object, ...]:
    """What identifies a cell's samples in a key: the ChatSEED ids (and their type) and the repeat numbers."""
    return (
        str(cell["seed_id"].dtype),
        tuple(str(s) for s in cell["seed_id"]),
        cell["repeat"].to_numpy(dtype=float),
        cell["judge_repeat"].to_numpy(dtype=float),
    )


def noise_floor(
    samples: pd.DataFrame, *, repeats: int, judge_repeats: int, store: result_cache.ResultStore | None = None
) -> pd.DataFrame:
    """One row per cell and paired metric: the variance decomposition, the spread over repeats and the rerun SD.

    A cell's rows depend on its own samples alone: with a `store` (core.result_cache) they are kept under a key of
    its samples' ids and per-dialogue values, and only the cells not stored are computed (by `cell_noise_floor`)."""
    store = store if store is not None else result_cache.MemoryStore()
    cells = _cell_rows(samples)
    values = np.column_stack([per_dialogue(samples, m).to_numpy(dtype=float) for m in PAIRED_METRICS])
    keys = [
        result_cache.content_key(
            repeats, judge_repeats, PAIRED_METRICS, _sample_key(samples.iloc[at]), np.ascontiguousarray(values[at])
        )
        for _, at in cells
    ]

    def compute(which: list[int]) -> list[np.ndarray]:
        out = []
        for k in which:
            rows = cell_noise_floor(samples.iloc[cells[k][1]], repeats=repeats, judge_repeats=judge_repeats)
            out.append(np.array([[float(row[f]) for f in _FIGURES] for row in rows]))
        return out

    figures = result_cache.cached_arrays(store, NOISE_KIND, keys, (len(PAIRED_METRICS), len(_FIGURES)), compute)
    rows = []
    for ((target, pool), _), cell in zip(cells, figures):
        for metric, found in zip(PAIRED_METRICS, cell):
            row: dict[str, object] = dict(zip(_FIGURES, (float(v) for v in found)))
            row["n_seeds"] = int(found[0])
            rows.append(
                {
                    "target": target,
                    "pool": pool,
                    "metric": metric,
                    "repeats": repeats,
                    "judge_repeats": judge_repeats,
                    **row,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def cell_noise_floor(cell: pd.DataFrame, *, repeats: int, judge_repeats: int) -> list[dict[str, float]]:
    """The noise-floor figures (_row) of one cell's samples, one dict per paired metric in PAIRED_METRICS order."""
    indexed = cell.set_index(SAMPLE)
    out = []
    for metric in PAIRED_METRICS:
        values = per_dialogue(indexed, metric).astype(float)
        values = values[~values.index.duplicated()]
        out.append(_row(values, repeats, judge_repeats))
    return out


def completion_by_repeat(samples: pd.DataFrame, judge_repeats: int) -> pd.DataFrame:
    """Each (cell, ChatSEED, repeat)'s final-intent completion over its first `judge_repeats` judge repeats: a
    majority of them (a tie counts as not completed, as between judges: metrics.combine_final_verdicts)."""
    done = samples[samples["judge_repeat"] < judge_repeats].dropna(subset=["completed"])
    grouped = done.groupby([*CELL, "seed_id", "repeat"], as_index=False).agg(
        votes=("completed", lambda c: int(c.astype(bool).sum())), samples=("completed", "size")
    )
    grouped["completed"] = grouped["votes"] * 2 > grouped["samples"]
    return grouped


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """The chance that k plays drawn without replacement from `trials` all succeed: C(c, k) / C(n, k)."""
    return comb(successes, k) / comb(trials, k)


def pass_k(
    samples: pd.DataFrame, *, repeats: int, judge_repeats: int, store: result_cache.ResultStore | None = None
) -> pd.DataFrame:
    """pass^k for k = 1..repeats per cell: the mean over ChatSEEDs (those with all `repeats` plays judged) of
    pass_hat_k (tau-bench's consistency measure; pass^1 is the completion rate).

    With a `store` (core.result_cache) a cell's values are kept under a key of its samples' ids and completion
    votes, and only the cells not stored are computed (by `cell_pass_k`)."""
    store = store if store is not None else result_cache.MemoryStore()
    cells = _cell_rows(samples)
    rated = samples["completed"].notna().to_numpy()
    votes = np.full(len(samples), np.nan)  # what completion_by_repeat reads: missing, or the vote as a bool
    votes[rated] = samples["completed"][rated].astype(bool).to_numpy(dtype=float)
    keys = [
        result_cache.content_key(repeats, judge_repeats, _sample_key(samples.iloc[at]), np.ascontiguousarray(votes[at]))
        for _, at in cells
    ]

    def compute(which: list[int]) -> list[np.ndarray]:
        out = []
        for k in which:
            rows = cell_pass_k(samples.iloc[cells[k][1]], repeats=repeats, judge_repeats=judge_repeats)
            out.append(rows[["n_seeds", "pass_k"]].to_numpy(dtype=float).ravel())
        return out

    rows = []
    for ((target, pool), _), cell in zip(cells, result_cache.cached_arrays(store, PASS_K_KIND, keys, None, compute)):
        for k, (n_seeds, value) in enumerate(cell.reshape(-1, 2), start=1):
            rows.append(
                {
                    "target": target,
                    "pool": pool,
                    "k": k,
                    "repeats": repeats,
                    "n_seeds": int(n_seeds),
                    "pass_k": float(value),
                }
            )
    return pd.DataFrame(rows, columns=PASS_K_COLUMNS)


def cell_pass_k(samples: pd.DataFrame, *, repeats: int, judge_repeats: int) -> pd.DataFrame:
    """pass^k of the cells of `samples`, computed from their rows (pass_k without a store computes each cell so)."""
    by_repeat = completion_by_repeat(samples[samples["repeat"] < repeats], judge_repeats)
    rows = []
    for (target, pool), cell in by_repeat.groupby(CELL, sort=True):
        per_seed = cell.groupby("seed_id").agg(c=("completed", "sum"), n=("completed", "size"))
        per_seed = per_seed[per_seed["n"] == repeats]
        for k in range(1, repeats + 1):
            values = [pass_hat_k(int(c), repeats, k) for c in per_seed["c"]]
            rows.append(
                {
                    "target": target,
                    "pool": pool,
                    "k": k,
                    "repeats": repeats,
                    "n_seeds": len(values),
                    "pass_k": float(np.mean(values)) if values else float("nan"),
                }
            )
    return pd.DataFrame(rows, columns=PASS_K_COLUMNS)
