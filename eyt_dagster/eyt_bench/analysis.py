"""EYT-Bench analysis tables (paper Tables 5, 7, 8, 13 and beyond): pure functions over per-dialogue and
per-turn scores. Each returns a long-format DataFrame that an asset stores and the HTML report renders."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from eyt_dagster.core import result_cache, stats
from eyt_dagster.core.explained import Step, figure
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.dialogue_scoring import DIMENSIONS, KEYS, LABELS, answered_turns, weighted_by_dialogue
from eyt_dagster.eyt_bench.leaderboard import HEADLINE
from eyt_dagster.eyt_bench.table_contracts import PAIRWISE_COMPARISONS_COLUMNS, THINKING_ABLATION_COLUMNS
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_TO_100, EMOTIONS, PAIRED_METRICS

CELL = ["target", "pool"]
# Metrics that are a ratio of per-dialogue sums (pooled over turns) and the columns that hold them.
RATIO_METRICS = {
    **{f"{s}_acc": (f"{s}_correct", "n_turns", 1.0) for s in LABELS},
    **{f"{d}_unweighted": (f"{d}_sum", "n_judged_turns", DIMENSION_TO_100) for d in DIMENSIONS},
}
# Metrics that are a mean over dialogues of a per-dialogue column.
MEAN_METRICS = {
    "drift": "drift",
    "directional_alignment": "directional_alignment",
    "ficr": "completed",
    "satisfaction": "satisfaction",
    **{d: d for d in DIMENSIONS},
    "mean_turns": "n_turns",
}
OBJECTIVE_METRICS = ("explicit_acc", "latent_acc", "emotion_acc", "emotion_macro_f1", "drift")


def per_dialogue(scores: pd.DataFrame, metric: str) -> pd.Series:
    """One value per dialogue for `metric` (a ratio metric becomes that dialogue's own ratio)."""
    if metric in RATIO_METRICS:
        num, den, scale = RATIO_METRICS[metric]
        return scores[num] / scores[den].replace(0, np.nan) * scale
    return scores[MEAN_METRICS[metric]].astype(float)


INTERVAL_METRICS = (*RATIO_METRICS, *MEAN_METRICS, "emotion_macro_f1")
# The per-dialogue columns a cell's intervals are computed from.
INTERVAL_COLUMNS = tuple(
    dict.fromkeys([c for num, den, _ in RATIO_METRICS.values() for c in (num, den)] + list(MEAN_METRICS.values()))
)
INTERVAL_KIND = "leaderboard_intervals.cell.v1"  # what a cell's stored intervals are computed by


def leaderboard_intervals(
    scores: pd.DataFrame,
    turns: pd.DataFrame,
    *,
    resamples: int,
    seed: int,
    store: result_cache.ResultStore | None = None,
) -> pd.DataFrame:
    """Every leaderboard mean with a 95% percentile bootstrap interval, dialogues resampled (docs/eyt-metrics.md).
    A cell's intervals depend on its own rows alone: with a `store` (core.result_cache) they are kept under a key of
    the cell's per-dialogue values, its emotion counts, the seed and the resamples, and only cells not stored are
    computed."""
    store = store if store is not None else result_cache.MemoryStore()
    emotion_counts = _emotion_counts_by_cell(answered_turns(turns))
    grouped = scores.groupby(CELL)
    cells = [(target, pool, cell) for (target, pool), cell in grouped]
    counts = [emotion_counts.get((t, p), np.zeros((0, len(EMOTIONS), 3))) for t, p, _ in cells]
    # a cell's key: its per-dialogue values as the bootstrap reads them (float64, in row order), its counts
    numbers = scores[list(INTERVAL_COLUMNS)].astype(float).to_numpy() if len(scores) else np.zeros((0, 0))
    positions = grouped.indices
    keys = [
        result_cache.content_key(numbers[positions[(t, p)]], c, resamples, seed) for (t, p, _), c in zip(cells, counts)
    ]

    def compute(which: list[int]) -> list[np.ndarray]:
        return [_cell_intervals(cells[k][2], counts[k], resamples, seed) for k in which]

    estimates = result_cache.cached_arrays(store, INTERVAL_KIND, keys, (len(INTERVAL_METRICS), 3), compute)
    rows = [
        {
            "target": target,
            "pool": pool,
            "metric": metric,
            "value": est[0],
            "ci_low": est[1],
            "ci_high": est[2],
            "n_dialogues": len(cell),
            "resamples": resamples,
            "seed": seed,
        }
        for (target, pool, cell), cell_estimates in zip(cells, estimates)
        for metric, est in zip(INTERVAL_METRICS, cell_estimates.tolist())
    ]
    return pd.DataFrame(rows)


# What each resample of a metric's interval computes (what _cell_intervals runs for it).
INTERVAL_STATISTICS = {
    "ratio": "the pooled ratio of its dialogues (each keeps its numerator and denominator together)",
    "mean": "the mean of its dialogues' values (those without one dropped first)",
    "macro_f1": "the macro-F1 of its dialogues' pooled per-label counts",
}


def explained_interval(
    metric: str, n_dialogues: int, resamples: int, seed: int | None, low: float, high: float, level: float = 0.95
) -> tuple[Step, ...]:
    """How the leaderboard_intervals row of `metric` was made, with its numbers: a percentile bootstrap that
    resamples the cell's dialogues (`_cell_intervals`). `seed` None: a row stored before the table kept it."""
    kind = "ratio" if metric in RATIO_METRICS else "macro_f1" if metric == "emotion_macro_f1" else "mean"
    drawn = f"default_rng({seed})" if seed is not None else "the slate's seed, not recorded in this row"
    resampled = Step(
        f"{resamples} resamples of the {n_dialogues} dialogue(s), drawn with replacement ({drawn}); each gives "
        f"{INTERVAL_STATISTICS[kind]}",
        "",
        None,
        (float(resamples), float(n_dialogues)) + ((float(seed),) if seed is not None else ()),
    )
    if np.isnan(low) or np.isnan(high):
        return resampled, Step("fewer than two dialogues with a value: no interval")
    tail = (1.0 - level) / 2.0 * 100
    bounds = Step(
        f"{level:.0%} interval: the {tail:g}th and {100 - tail:g}th percentiles of the resamples",
        "",
        f"{figure(low)} to {figure(high)}",
        (low, high),
    )
    return resampled, bounds


def _cell_intervals(cell: pd.DataFrame, counts: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """(INTERVAL_METRICS x 3) value, ci_low, ci_high of one cell."""
    out = []
    for num, den, scale in RATIO_METRICS.values():
        est = stats.bootstrap_ratio_ci(cell[num], cell[den], resamples=resamples, seed=seed)
        out.append(tuple(v * scale for v in est))
    for column in MEAN_METRICS.values():
        out.append(stats.bootstrap_mean_ci(cell[column].astype(float), resamples=resamples, seed=seed))
    out.append(stats.bootstrap_macro_f1_ci(counts, resamples=resamples, seed=seed))
    return np.array(out, dtype=float)


def _emotion_counts_by_cell(answered: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """Per target x pool, the (dialogues x emotions x 3) tp / fp / fn counts of its answered turns, one row per
    dialogue in seed_id order (the units the macro-F1 bootstrap resamples), counted for all cells at once."""
    if answered.empty:
        return {}
    grouped = answered.groupby(KEYS, sort=True)
    unit = grouped.ngroup().to_numpy()
    units = grouped.size().index.to_frame(index=False)
    counts = stats.class_counts_by_unit(
        unit, len(units), answered["gold_emotion"].to_numpy(), answered["pred_emotion"].to_numpy(), EMOTIONS
    )
    return {
        (target, pool): counts[rows.to_numpy()]
        for (target, pool), rows in units.groupby(CELL, sort=False).groups.items()
    }


# The family a pairwise p-value is adjusted over (Holm): every pair of targets on one pool and one metric.
ADJUSTED_FAMILY = ("pool", "metric")


def holm_by_family(table: pd.DataFrame, p_column: str) -> pd.Series:
    """`p_column` after Holm's adjustment within each family of ADJUSTED_FAMILY (every pair of one pool and metric),
    aligned with `table`'s rows."""
    adjusted = pd.Series(np.nan, index=table.index, dtype="float64")
    for _, family in table.groupby(list(ADJUSTED_FAMILY), sort=False):
        adjusted.loc[family.index] = stats.holm_adjusted(family[p_column].to_numpy())
    return adjusted


SIGNIFICANCE_LEVEL = 0.05


def pairwise_comparisons(
    scores: pd.DataFrame, *, resamples: int, seed: int, store: result_cache.ResultStore | None = None
) -> pd.DataFrame:
    """For each pool and pair of targets, the paired bootstrap difference (a - b) of per-dialogue values on
    the ChatSEEDs both played, whether its 95% interval excludes zero, its two-sided p-value (normal
    approximation from the bootstrap standard error), that p-value Holm-adjusted over every pair of the pool
    and metric, `significant_adjusted` (adjusted p < 0.05), and the minimum difference the pair's ChatSEEDs
    would detect at 80% power (unadjusted, two-sided 5%).

    Each target's per-dialogue values are one row of a (targets x ChatSEEDs) matrix per pool and metric, the
    ChatSEEDs in id order (the pool's ChatSEEDs, whichever targets there are), and every pair shares one
    resample-index matrix (core.stats.paired_bootstrap_table): the cost grows with targets x resamples x
    ChatSEEDs for the resampling plus pairs x resamples for the intervals, not pairs x resamples x ChatSEEDs.

    A pair's figures depend only on its two rows, the pool's ChatSEEDs, the seed and the resamples, so with a
    `store` (core.result_cache) each target's resample means and each pair's figures are kept under a key of
    exactly those, and only the rows and pairs not stored are computed; the table is the same either way."""
    store = store if store is not None else result_cache.MemoryStore()
    frames = []
    for pool, in_pool in scores.groupby("pool", sort=True):
        targets = sorted(in_pool["target"].unique())
        seeds = sorted(pd.unique(in_pool["seed_id"]))
        pairs = list(combinations(range(len(targets)), 2))
        if not pairs:
            continue
        played = in_pool.drop_duplicates(["target", "seed_id"]).set_index(["target", "seed_id"])
        present = (
            pd.Series(True, index=played.index).unstack("seed_id").reindex(index=targets, columns=seeds).notna()
        ).to_numpy()
        matrices = np.stack(
            [
                per_dialogue(played, metric).unstack("seed_id").reindex(index=targets, columns=seeds).to_numpy(float)
                for metric in PAIRED_METRICS
            ]
        )  # metrics x targets x ChatSEEDs
        figures = _pair_figures(matrices, present, pairs, seeds, resamples, seed, store)
        a, b = (np.array([p[k] for p in pairs]) for k in (0, 1))
        for m, metric in enumerate(PAIRED_METRICS):
            got = figures[:, m, :]
            frames.append(
                pd.DataFrame(
                    {
                        "pool": pool,
                        "metric": metric,
                        "target_a": np.array(targets, dtype=object)[a],
                        "target_b": np.array(targets, dtype=object)[b],
                        "n_paired": got[:, 0].astype(int),
                        "mean_a": got[:, 1],
                        "mean_b": got[:, 2],
                        "diff": got[:, 3],
                        "ci_low": got[:, 4],
                        "ci_high": got[:, 5],
                        "excludes_zero": (got[:, 4] > 0) | (got[:, 5] < 0),
                        "se": got[:, 6],
                    }
                )
            )
    if not frames:
        return pd.DataFrame(columns=list(PAIRWISE_COLUMNS))
    table = pd.concat(frames, ignore_index=True)
    table["p_value"] = stats.normal_p_value(table["diff"], table["se"])
    table["p_adjusted"] = holm_by_family(table, "p_value")
    table["significant_adjusted"] = table["p_adjusted"] < SIGNIFICANCE_LEVEL
    table["mde_80"] = stats.min_detectable_difference(table["se"], alpha=SIGNIFICANCE_LEVEL, power=0.8)
    return table[list(PAIRWISE_COLUMNS)]


# What the stored parts of the pairwise table are computed by: a change to how a row's resample means or a pair's
# figures are computed changes these, so nothing stored before is reused.
PAIR_MEANS_KIND = "pairwise.resample_means.v1"
PAIR_FIGURES_KIND = "pairwise.pair_figures.v1"
PAIR_FIGURES = 7  # n_paired, mean_a, mean_b, diff, ci_low, ci_high, se


def _pair_figures(
    matrices: np.ndarray,
    present: np.ndarray,
    pairs: list[tuple[int, int]],
    seeds: list[str],
    resamples: int,
    seed: int,
    store: result_cache.ResultStore,
) -> np.ndarray:
    """(pairs x metrics x PAIR_FIGURES) of one pool: the stored pairs read, the others computed from the targets'
    resample means (themselves stored per target)."""
    n_metrics, n_targets, _ = matrices.shape
    columns = result_cache.content_key("chat_seeds", tuple(str(s) for s in seeds), resamples, seed)
    row_keys = [
        result_cache.content_key(columns, present[t], matrices[:, t, :]) for t in range(n_targets)
    ]  # a target's key: its values and ChatSEEDs on this pool's ChatSEED columns, the seed and resamples
    pair_keys = [result_cache.content_key(row_keys[i], row_keys[j]) for i, j in pairs]
    complete = ~np.isnan(matrices).any(axis=2)  # metrics x targets

    def compute(which: list[int]) -> list[np.ndarray]:
        chosen = [pairs[k] for k in which]
        rows = sorted({t for pair in chosen for t in pair})

        def row_means(at: list[int]) -> list[np.ndarray]:
            out = np.full((len(at), n_metrics, resamples), np.nan)
            for k, t in enumerate(rows[i] for i in at):
                for m in range(n_metrics):
                    if complete[m, t] and matrices.shape[2] >= 2:
                        out[k, m] = stats.resample_means(matrices[m, t], resamples=resamples, seed=seed)
            return list(out)

        stored = result_cache.cached_arrays(
            store, PAIR_MEANS_KIND, [row_keys[t] for t in rows], (n_metrics, resamples), row_means
        )
        means = np.full((n_metrics, n_targets, resamples), np.nan)
        for t, kept in zip(rows, stored):
            means[:, t, :] = kept
        a, b = (np.array([p[k] for p in chosen]) for k in (0, 1))
        shared = present[a] & present[b]
        out = np.empty((len(chosen), n_metrics, PAIR_FIGURES))
        for m in range(n_metrics):
            matrix = matrices[m]
            res = stats.paired_bootstrap_table(matrix, chosen, resamples=resamples, seed=seed, means=means[m])
            out[:, m] = np.column_stack(
                [
                    res["n"],
                    _masked_mean(matrix[a], shared),  # a side's mean: over the ChatSEEDs both played, NaNs skipped
                    _masked_mean(matrix[b], shared),
                    res["diff"],
                    res["low"],
                    res["high"],
                    res["se"],
                ]
            )
        return list(out)

    figures = result_cache.cached_arrays(store, PAIR_FIGURES_KIND, pair_keys, (n_metrics, PAIR_FIGURES), compute)
    return np.stack(figures)


# the table's columns as its contract (table_contracts.py) orders them, without what the asset adds
# (the baseline flags, created_at)
PAIRWISE_COLUMNS = tuple(
    column_names(PAIRWISE_COMPARISONS_COLUMNS, without=("is_baseline_pair", "self_preference_risk", "created_at"))
)


def _masked_mean(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Row means of `values` over the columns `keep` marks, NaN values skipped (NaN when none is left)."""
    keep = keep & ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(keep, values, 0.0).sum(axis=1) / keep.sum(axis=1)


ALPHA_KIND = "alpha_sensitivity.cell.v1"  # what a cell's stored sweep is computed by
ALPHA_FIGURES = ("weighted", "unweighted", "early", "late", "warmup_delta")


def alpha_sensitivity(
    turn_dims: pd.DataFrame,
    lengths: pd.Series,
    alphas: tuple[float, ...],
    store: result_cache.ResultStore | None = None,
) -> pd.DataFrame:
    """Paper Table 8: weighted score per alpha, unweighted, early (t <= 2) and late (t >= 3) raw means and
    their difference (the warm-up effect), all on 0-100, with a rank-flip check across the sweep. `lengths`
    is each finished dialogue's T (dialogue_scoring.dialogue_lengths), which the Eq. 4 weights need.

    A cell's figures depend on its own turns and lengths: with a `store` (core.result_cache) they are kept under
    a key of those and the alphas, and only cells not stored are computed; the rank flips are over all targets."""
    store = store if store is not None else result_cache.MemoryStore()
    dims = turn_dims.reset_index(drop=True)
    lens = lengths.reset_index()
    dim_cells, len_cells = dims.groupby(CELL).indices, lens.groupby(CELL).indices
    cells = sorted(set(dim_cells) & set(len_cells))
    dim_numbers = dims[["turn", *DIMENSIONS]].to_numpy(dtype=float)
    dim_seeds = pd.util.hash_array(dims["seed_id"].astype(str).to_numpy(dtype=object))
    len_numbers = lens[lengths.name or "n_turns"].to_numpy(dtype=float)
    len_seeds = pd.util.hash_array(lens["seed_id"].astype(str).to_numpy(dtype=object))
    keys = [
        result_cache.content_key(
            dim_numbers[dim_cells[c]],
            dim_seeds[dim_cells[c]],
            len_numbers[len_cells[c]],
            len_seeds[len_cells[c]],
            tuple(float(a) for a in alphas),
        )
        for c in cells
    ]  # a cell's key: its turns' numbers and ChatSEEDs, its dialogues' lengths, the alphas
    shape = (len(alphas), len(DIMENSIONS), len(ALPHA_FIGURES) + 1)  # the last: whether the cell has a row

    def compute(which: list[int]) -> list[np.ndarray]:
        chosen = [cells[k] for k in which]
        in_dims = np.concatenate([dim_cells[c] for c in chosen])
        in_lens = np.concatenate([len_cells[c] for c in chosen])
        part_dims = dims.iloc[np.sort(in_dims)]
        part_lengths = lengths.iloc[np.sort(in_lens)]
        out = {c: np.full(shape, np.nan) for c in chosen}
        for a, alpha in enumerate(alphas):
            per_dialogue = weighted_by_dialogue(part_dims, part_lengths, alpha)
            for (target, pool), cell in per_dialogue.groupby(CELL):
                for k, d in enumerate(DIMENSIONS):
                    early = cell[f"{d}_early"].mean() * DIMENSION_TO_100
                    late = cell[f"{d}_late"].mean() * DIMENSION_TO_100
                    out[(target, pool)][a, k] = (
                        float(cell[d].mean()),
                        float(cell[f"{d}_sum"].sum() / cell["n_judged_turns"].sum() * DIMENSION_TO_100),
                        float(early),
                        float(late),
                        float(early - late),
                        1.0,
                    )
        return [out[c] for c in chosen]

    figures = result_cache.cached_arrays(store, ALPHA_KIND, keys, shape, compute) if cells else []
    rows = [
        {
            "target": target,
            "pool": pool,
            "dimension": d,
            "alpha": alpha,
            **dict(zip(ALPHA_FIGURES, values[a, k, :-1].tolist())),
        }
        for a, alpha in enumerate(alphas)
        for (target, pool), values in zip(cells, figures)
        if values[a, 0, -1] == 1.0
        for k, d in enumerate(DIMENSIONS)
    ]
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    flips = {}
    for (pool, d), block in table.groupby(["pool", "dimension"]):
        wide = block.pivot(index="target", columns="alpha", values="weighted")
        flips[(pool, d)] = len(stats.rank_flips(wide)) > 0
    table["rank_flip"] = [flips[(p, d)] for p, d in zip(table["pool"], table["dimension"])]
    return table


def turn_curves(turn_dims: pd.DataFrame) -> pd.DataFrame:
    """Mean score (0-100) per turn index, per target, pool and dimension: the warm-up curve."""
    long = turn_dims.melt(
        id_vars=[*KEYS, "turn"], value_vars=list(DIMENSIONS), var_name="dimension", value_name="score"
    )
    out = (
        long.groupby([*CELL, "dimension", "turn"]).agg(mean_score=("score", "mean"), n=("score", "size")).reset_index()
    )
    out["mean_score"] *= DIMENSION_TO_100
    return out


def trajectory(scores: pd.DataFrame) -> pd.DataFrame:
    """Paper Table 13: drift, directional alignment, FICR, satisfaction and mean turns per target and pool."""
    return (
        scores.groupby(CELL)
        .agg(
            n_dialogues=("seed_id", "size"),
            drift=("drift", "mean"),
            directional_alignment=("directional_alignment", "mean"),
            ficr=("completed", "mean"),
            satisfaction=("satisfaction", "mean"),
            mean_turns=("n_turns", "mean"),
        )
        .reset_index()
    )


def persona_source_comparison(board: pd.DataFrame, families: dict[str, str], pools: tuple[str, str]) -> pd.DataFrame:
    """Paper Table 5: each family's mean of every headline metric per pool, and the shift between pools."""
    board = board.assign(family=board["target"].map(families).fillna("(not in slate)"))
    means = board.groupby(["family", "pool"])[list(HEADLINE)].mean()
    counts = board.groupby("family")["target"].nunique()
    rows = []
    for family in means.index.get_level_values("family").unique():
        for metric in HEADLINE:
            a = means.loc[(family, pools[0]), metric] if (family, pools[0]) in means.index else np.nan
            b = means.loc[(family, pools[1]), metric] if (family, pools[1]) in means.index else np.nan
            rows.append(
                {
                    "family": family,
                    "metric": metric,
                    pools[0]: a,
                    pools[1]: b,
                    "shift": b - a,
                    "n_targets": int(counts[family]),
                }
            )
    return pd.DataFrame(rows)


def thinking_ablation(board: pd.DataFrame, pairs: list[tuple[str, str, str]], highlight: float) -> pd.DataFrame:
    """Paper Table 7: for each declared (name, think, non_think) pair and pool, think minus non-think on
    every headline metric; objective-metric cells with |delta| >= highlight are flagged."""
    indexed = board.set_index(CELL)
    rows = []
    for name, think, non_think in pairs:
        for pool in sorted(board["pool"].unique()):
            if (think, pool) not in indexed.index or (non_think, pool) not in indexed.index:
                continue
            for metric in HEADLINE:
                t, n = indexed.loc[(think, pool), metric], indexed.loc[(non_think, pool), metric]
                rows.append(
                    {
                        "pair": name,
                        "think_target": think,
                        "non_think_target": non_think,
                        "pool": pool,
                        "metric": metric,
                        "think": t,
                        "non_think": n,
                        "delta": t - n,
                        "highlighted": bool(metric in OBJECTIVE_METRICS and abs(t - n) >= highlight),
                    }
                )
    return pd.DataFrame(
        rows,  # the contract's columns but the ones the asset adds (the baseline flags, created_at)
        columns=column_names(THINKING_ABLATION_COLUMNS, without=("is_baseline", "self_preference_risk", "created_at")),
    )
