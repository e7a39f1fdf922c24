"""How the pairwise comparisons (dialogue.pairwise_comparisons) grow with the number of targets. Not a test: run it
by hand.

It synthesises per-dialogue scores (the dialogue.dialogue_scores columns the comparison reads) for N targets x 2
pools x 65 ChatSEEDs, each target a copy of one with its own shift and noise, and times
eyt_dagster.eyt_bench.analysis.pairwise_comparisons at each N (1,000 resamples, 9 metrics), then the cost of
adding one more target. The lower bound it prints is the resampling that cannot be avoided: every target's values
resampled once per metric (targets x resamples x ChatSEEDs) plus one sort of resamples per pair and metric.

    python bench/pairwise_scale.py                     # 10, 30 and 100 targets
    python bench/pairwise_scale.py --targets 100 200 --reps 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.eyt_bench import analysis  # noqa: E402

POOLS = ("nemotron_usa", "personamem_v2")
SEEDS = 65


def scores(targets: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(targets):
        shift = rng.normal(0, 0.05)
        for pool in POOLS:
            n_turns = rng.integers(3, 11, size=SEEDS)
            rows.append(
                pd.DataFrame(
                    {
                        "target": f"target-{t:03d}",
                        "pool": pool,
                        "seed_id": [f"{pool}:p{i:02d}" for i in range(SEEDS)],
                        "n_turns": n_turns,
                        "explicit_correct": rng.binomial(n_turns, np.clip(0.7 + shift, 0, 1)),
                        "latent_correct": rng.binomial(n_turns, np.clip(0.5 + shift, 0, 1)),
                        "emotion_correct": rng.binomial(n_turns, np.clip(0.6 + shift, 0, 1)),
                        "drift": rng.uniform(0, 1, SEEDS),
                        "completed": rng.random(SEEDS) < 0.6 + shift,
                        "satisfaction": rng.integers(1, 6, SEEDS).astype(float),
                        "empathy": np.clip(rng.normal(60 + 100 * shift, 15, SEEDS), 0, 100),
                        "persona": np.clip(rng.normal(55, 15, SEEDS), 0, 100),
                        "anthropomorphic": np.clip(rng.normal(50, 15, SEEDS), 0, 100),
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def timed(frame: pd.DataFrame, resamples: int, reps: int) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        analysis.pairwise_comparisons(frame, resamples=resamples, seed=20260521)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def floor_seconds(targets: int, resamples: int) -> float:
    """The unavoidable work at this size, timed in numpy alone: each target's values resampled once per pool
    and metric, and each pair's draws sorted once for its quantiles."""
    metrics, pairs = len(analysis.PAIRED_METRICS), targets * (targets - 1) // 2
    rng = np.random.default_rng(0)
    values, idx = rng.random(SEEDS), rng.integers(0, SEEDS, (resamples, SEEDS))
    started = time.perf_counter()
    for _ in range(50):
        values[idx].mean(axis=1)
    resample = (time.perf_counter() - started) / 50
    draws = rng.random((min(pairs, 2000), resamples))
    started = time.perf_counter()
    np.quantile(draws, [0.025, 0.975], axis=1)
    per_pair = (time.perf_counter() - started) / draws.shape[0]
    return len(POOLS) * metrics * (targets * resample + pairs * per_pair)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, nargs="+", default=[10, 30, 100])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    analysis.pairwise_comparisons(scores(3), resamples=100, seed=1)  # imports and first-call costs
    print(
        f"pairwise_comparisons: 2 pools x {SEEDS} ChatSEEDs x {len(analysis.PAIRED_METRICS)} metrics, "
        f"{args.resamples} resamples, median of {args.reps}"
    )
    print(f"{'targets':>8} {'pairs':>7} {'rows':>8} {'seconds':>8} {'floor s':>8} {'ratio':>6} {'+1 target s':>12}")
    for n in args.targets:
        frame, more = scores(n), scores(n + 1)
        seconds, bigger = timed(frame, args.resamples, args.reps), timed(more, args.resamples, args.reps)
        pairs = n * (n - 1) // 2
        floor = floor_seconds(n, args.resamples)
        rows = pairs * len(POOLS) * len(analysis.PAIRED_METRICS)
        print(f"{n:>8} {pairs:>7} {rows:>8} {seconds:>8.2f} {floor:>8.2f} {seconds / floor:>6.1f} {bigger:>12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
