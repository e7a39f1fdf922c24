"""Judge calibration (paper §4.9, Tables 9 and 14): agreement within an ensemble, and the cross-judge
ablation that re-judges a stratified subsample with a judge of another family. Pure logic."""

from __future__ import annotations

import random
from typing import Literal

import numpy as np
import pandas as pd

from eyt_dagster.core import result_cache, stats
from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.dialogue_scoring import DIMENSIONS, KEYS, ok_rows
from eyt_dagster.eyt_bench.sampling import allocate
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_TO_100

TURN_KEYS = [*KEYS, "turn"]
CELL = ["target", "pool"]


AGREEMENT_KIND = "judge_agreement.cell.v1"  # what a cell's stored coincidences are computed by


def agreement_table(
    verdicts: pd.DataFrame, finals: pd.DataFrame, store: result_cache.ResultStore | None = None
) -> pd.DataFrame:
    """Per dimension, Krippendorff's alpha across judges (ordinal and interval, over judged turns); for
    completion, nominal alpha and the share of dialogues whose judges voted unanimously.

    The units (turns, dialogues) of one target x pool are that cell's alone, so alpha is taken from the sum of each
    cell's coincidence matrix (core.stats.coincidences): with a `store` (core.result_cache) a cell's matrices are
    kept under a key of its judges' ratings, and only cells not stored are counted."""
    store = store if store is not None else result_cache.MemoryStore()
    ok, ok_finals = ok_rows(verdicts), ok_rows(finals)
    judges = sorted(ok["judge"].unique())
    dims = metrics.dimension_sums(ok).assign(judge=ok["judge"].to_numpy())
    rows = []
    for d in DIMENSIONS:
        wide = dims.pivot_table(index="judge", columns=TURN_KEYS, values=d, aggfunc="first")
        summed = _summed_coincidences(wide, store)
        rows.append(
            {
                "measure": d,
                "n_judges": len(judges),
                "n_units": wide.shape[1],
                "alpha_ordinal": _alpha(wide, summed, "ordinal"),
                "alpha_interval": _alpha(wide, summed, "interval"),
                "unanimous_share": float("nan"),
            }
        )
    votes = ok_finals.pivot_table(index="judge", columns=KEYS, values="completed", aggfunc="first").astype(float)
    completion = _summed_coincidences(votes, store) if votes.size else None
    unanimous = completion[3] if completion is not None else 0
    rows.append(
        {
            "measure": "completion",
            "n_judges": len(judges),
            "n_units": votes.shape[1],
            "alpha_ordinal": float("nan"),
            "alpha_interval": float("nan"),
            "alpha_nominal": _alpha(votes, completion, "nominal") if completion is not None else float("nan"),
            "unanimous_share": unanimous / votes.shape[1] if votes.shape[1] and len(judges) > 1 else float("nan"),
        }
    )
    return pd.DataFrame(rows)


def _summed_coincidences(
    wide: pd.DataFrame, store: result_cache.ResultStore
) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """Of a (judges x units) pivot whose units are keyed by target and pool first: the observed values, the sum of
    the cells' coincidence matrices over them (cells in column order), whether any unit has two ratings, and how
    many units have a single value (unanimous)."""
    ratings = wide.to_numpy(dtype=float)
    cells = pd.DataFrame(
        {"target": wide.columns.get_level_values("target"), "pool": wide.columns.get_level_values("pool")}
    )
    positions = list(cells.groupby(CELL, sort=False).indices.values())
    judges = tuple(str(j) for j in wide.index)
    keys = [result_cache.content_key(judges, ratings[:, at]) for at in positions]

    def compute(which: list[int]) -> list[np.ndarray]:
        out = []
        for k in which:
            part = ratings[:, positions[k]]
            domain = np.unique(part[~np.isnan(part)])
            paired = float(((~np.isnan(part)).sum(axis=0) >= 2).any())
            single = float(_single_value(part).sum()) if part.size else 0.0
            matrix = stats.coincidences(part, domain) if domain.size else np.zeros((0, 0))
            out.append(np.concatenate([[domain.size, paired, single], domain, matrix.ravel()]))
        return out

    parts = result_cache.cached_arrays(store, AGREEMENT_KIND, keys, None, compute)
    domains = [part[3 : 3 + int(part[0])] for part in parts]
    domain = np.unique(np.concatenate(domains)) if domains else np.zeros(0)
    total = np.zeros((domain.size, domain.size))
    for part, values in zip(parts, domains):
        at = np.searchsorted(domain, values)
        total[np.ix_(at, at)] += part[3 + values.size :].reshape(values.size, values.size)
    return domain, total, bool(any(part[1] for part in parts)), int(sum(part[2] for part in parts))


def _alpha(
    wide: pd.DataFrame,
    summed: tuple[np.ndarray, np.ndarray, bool, int],
    level: Literal["nominal", "ordinal", "interval"],
) -> float:
    """core.stats.krippendorff_alpha of the pivot, from its cells' summed coincidences: NaN with fewer than two
    judges, no unit rated twice, or one value throughout."""
    domain, observed, paired, _ = summed
    if wide.shape[0] < 2 or not paired or domain.size < 2:
        return float("nan")
    return stats.alpha_from_coincidences(observed, domain, level)


def _single_value(ratings: np.ndarray) -> np.ndarray:
    """Per column of a (raters x units) matrix: whether its ratings that are not NaN are all one value (a column of
    NaN only is not); DataFrame.nunique(axis=0) == 1 for all units at once."""
    rated = ~np.isnan(ratings)
    filled = np.where(rated, ratings, 0.0)
    first = filled[rated.argmax(axis=0), np.arange(ratings.shape[1])]
    return rated.any(axis=0) & ((filled == first) | ~rated).all(axis=0)


def cross_judge_sample(scores: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """A stratified, seeded subsample of n dialogues across the (pool, target) cells (largest-remainder
    allocation in proportion to each cell's dialogues). Returns the sampled (target, pool, seed_id) rows."""
    cells = {f"{p}|{t}": sorted(g["seed_id"]) for (t, p), g in scores.groupby(CELL)}
    quota = allocate({k: len(v) for k, v in cells.items()}, min(n, len(scores)))
    rows = []
    for key, ids in sorted(cells.items()):
        pool, target = key.split("|", 1)
        for seed_id in sorted(random.Random(f"{seed}:cross-judge:{key}").sample(ids, quota[key])):
            rows.append({"target": target, "pool": pool, "seed_id": seed_id})
    return pd.DataFrame(rows, columns=KEYS)


def _dialogue_means(verdicts: pd.DataFrame, finals: pd.DataFrame, combine: str) -> pd.DataFrame:
    """Per dialogue: mean per-turn dimension score (0-100) and satisfaction (0-100), judges combined."""
    dims = metrics.dimension_sums(metrics.combine_judges(ok_rows(verdicts), combine))
    per = dims.groupby(KEYS)[list(DIMENSIONS)].mean() * DIMENSION_TO_100
    sat = metrics.combine_final_verdicts(ok_rows(finals), combine).set_index(KEYS)["satisfaction"]
    return per.join(metrics.satisfaction_to_100(sat).rename("satisfaction"), how="outer").reset_index()


ABLATION_COLUMNS = [
    "kind",
    "pool",
    "metric",
    "primary",
    "replacement",
    "delta",
    "mean_abs_delta",
    "kendall_tau",
    "spearman_rho",
    "n_dialogues",
    "n_targets",
]


def ablation_table(
    sample: pd.DataFrame,
    primary: tuple[pd.DataFrame, pd.DataFrame],
    replacement: tuple[pd.DataFrame, pd.DataFrame],
    combine: str = "mean",
) -> pd.DataFrame:
    """Paper Table 9 / 14: on the sampled dialogues, replacement minus primary per dimension and satisfaction
    (0-100): `delta` is the signed mean difference (the calibration offset the paper's Delta columns show) and
    `mean_abs_delta` the mean absolute difference (the paper's mean |Delta| for satisfaction, §4.9), per
    dialogue for the score rows and per target for the ranking rows; and per pool whether the two judges rank
    the targets alike (Kendall tau-b, Spearman rho)."""
    keep = sample.set_index(KEYS).index

    def restrict(df: pd.DataFrame) -> pd.DataFrame:
        return df[df.set_index(KEYS).index.isin(keep)]

    a = _dialogue_means(restrict(primary[0]), restrict(primary[1]), combine)
    b = _dialogue_means(restrict(replacement[0]), restrict(replacement[1]), combine)
    both = a.merge(b, on=KEYS, suffixes=("_primary", "_replacement"))
    rows = []
    for metric in (*DIMENSIONS, "satisfaction"):
        p, r = both[f"{metric}_primary"], both[f"{metric}_replacement"]
        rows.append(
            {
                "kind": "score",
                "pool": "all",
                "metric": metric,
                "primary": float(p.mean()),
                "replacement": float(r.mean()),
                "delta": float((r - p).mean()),
                "mean_abs_delta": float((r - p).abs().mean()),
                "kendall_tau": np.nan,
                "spearman_rho": np.nan,
                "n_dialogues": len(both),
                "n_targets": both["target"].nunique(),
            }
        )
        for pool, block in both.groupby("pool"):
            by_target = block.groupby("target")[[f"{metric}_primary", f"{metric}_replacement"]].mean()
            x, y = by_target.iloc[:, 0], by_target.iloc[:, 1]
            rows.append(
                {
                    "kind": "ranking",
                    "pool": pool,
                    "metric": metric,
                    "primary": float(x.mean()),
                    "replacement": float(y.mean()),
                    "delta": float((y - x).mean()),
                    "mean_abs_delta": float((y - x).abs().mean()),
                    "kendall_tau": stats.kendall_tau(x, y),
                    "spearman_rho": stats.spearman_rho(x, y),
                    "n_dialogues": len(block),
                    "n_targets": len(by_target),
                }
            )
    return pd.DataFrame(rows, columns=ABLATION_COLUMNS)
