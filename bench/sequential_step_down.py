"""Why the sequential design (eyt_dagster/core/sequential.py) keeps Bonferroni over a family's pairs instead of a
step-down (Holm-type) reallocation of alpha. Not a test: run it by hand; docs/eyt-metrics.md#stopping-when-the-ranking-is-settled
quotes its output.

The step-down measured here: per pair and metric, the decision p-value is the smallest level at which the pair gets
any verdict (`sequential.verdict_p_values`, running minimum over looks); at each look, with r pairs of the family
(pool, metric) already decided, every open pair whose decision p-value is below alpha / (K - r) is decided, with
the verdict of its interval at that level (a separation first, as `sequential.verdicts`), r grows, and the step is
repeated until no pair is added (Holm's step-down, one look at a time).

1. `idealised`: K = 45 independent pairs with true difference 0, one look, exact normal intervals (standard error
   1) and a margin of `mu` standard errors. A pair's verdict is wrong when it is 'ahead'. Bonferroni reads every
   pair at alpha / K; the step-down reads the pairs it decides at alpha / K, alpha / (K - 1), ... up to alpha. Once
   the margin is wide enough for most pairs to be settled 'within margin', the last pairs are read at levels near
   alpha and the family-wise error is several times alpha: the reallocation is not valid for these verdicts.
2. `slates`: the step-down on bench/sequential_design.py's scenarios, beside Bonferroni: the calls it would save,
   and the false separations it makes there (the confidence sequence's slack can hide the excess on a given
   simulation; item 1 shows it is not a guarantee).

    PYTHONPATH=. .venv/bin/python bench/sequential_step_down.py --slates 200 --seed 0
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.special import ndtr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.core import sequential as sq  # noqa: E402


def idealised(mu: float, reps: int, rng: np.random.Generator, alpha: float = 0.05, k: int = 45) -> dict[str, float]:
    """Family-wise wrong verdicts of Bonferroni and the step-down on K independent tied pairs at one look."""
    z = np.abs(rng.normal(size=(reps, k)))
    p0 = 2.0 * ndtr(-z)  # the level at which the interval excludes 0: 'ahead' below it
    pw = np.where(z < mu, 2.0 * ndtr(-(mu - z)), 1.0)  # the level at which it lies inside (-mu, mu)
    pi = np.minimum(p0, pw)
    s = np.sort(pi, axis=1)
    ok = s < alpha / (k - np.arange(k))
    n_rej = np.where(ok.all(axis=1), k, np.argmin(ok, axis=1))  # Holm: up to the first failure
    rank = np.argsort(np.argsort(pi, axis=1), axis=1)  # 0-based position of each pair in Holm's order
    level = alpha / (k - rank)  # the level Holm reads the pair at
    decided = rank < n_rej[:, None]
    wrong_holm = (decided & (p0 < level)).any(axis=1)  # read at its level, a separation wins
    wrong_bonf = (p0 < alpha / k).any(axis=1)
    return {
        "mu": mu,
        "decided_share_step_down": float(decided.mean()),
        "fwer_bonferroni": float(wrong_bonf.mean()),
        "fwer_step_down": float(wrong_holm.mean()),
    }


def run_step_down(
    scores: ArrayLike,
    design: sq.SequentialDesign,
    n_total: int | None = None,
    *,
    metrics: Sequence[str],
    targets: Sequence[str] | None = None,
    t_opt: float | None = None,
) -> sq.SequentialResult:
    """`sq.run_sequential` with the step-down in place of Bonferroni (whole scores, all looks reached); the
    decisions table carries the columns the benchmark reads; `targets` is accepted and unused."""
    x = np.asarray(scores, dtype=float)
    n_targets, n_items, _ = x.shape
    n_total = n_items if n_total is None else n_total
    used = [j for j, m in enumerate(metrics) if m in design.margin]
    margins = np.array([design.margin[metrics[j]] for j in used])
    pairs = list(combinations(range(n_targets), 2))
    k = len(pairs)
    looks = sq.look_points(design.min_dialogues, design.batch, n_total)
    a, b = (np.array([p[i] for p in pairs]) for i in (0, 1))
    diffs = np.moveaxis(x[a][:, :, used] - x[b][:, :, used], 1, 2)  # pairs x metrics x items
    a_k = design.alpha / k
    t_opt = design.t_opt(n_total) if t_opt is None else t_opt
    ci = sq.running_intervals(diffs, a_k, t_opt, sq.SD_FLOOR_OF_MARGIN * margins[None, :])
    pv = sq.verdict_p_values(ci, a_k, t_opt, margins[None, :])[:, :, looks - 1]  # pairs x metrics x looks x 3
    pv = np.minimum.accumulate(pv, axis=2)
    pi = pv.min(axis=-1)
    code = np.zeros((k, len(used)), dtype=np.int8)
    decided_items = np.full((k, len(used)), np.nan)
    for li, n in enumerate(looks):
        for m in range(len(used)):
            while True:
                open_ = code[:, m] == 0
                level = design.alpha / open_.sum() if open_.any() else 1.0
                new = open_ & (pi[:, m, li] < level)
                if not new.any():
                    break
                p3 = pv[new, m, li]  # A, B, within; a separation first
                code[new, m] = np.where(p3[:, 0] < level, 1, np.where(p3[:, 1] < level, 2, 3))
                decided_items[new, m] = n
    last = np.where(np.isnan(decided_items), n_total, decided_items).max(axis=1)
    played = np.zeros(n_targets, dtype=int)
    for (i, j), items in zip(pairs, last, strict=True):
        played[i], played[j] = max(played[i], int(items)), max(played[j], int(items))
    decisions = pd.DataFrame(
        {
            "verdict": np.array(sq.VERDICTS, dtype=object)[code.ravel()],
            "undecided_at_n": np.isnan(decided_items).ravel(),
        }
    )
    fraction = float(played.sum() / (n_targets * n_total))
    return sq.SequentialResult(decisions, played, fraction, looks, True)


def _bench() -> ModuleType:  # bench/sequential_design.py as a module
    spec = importlib.util.spec_from_file_location("sequential_design_bench", ROOT / "bench" / "sequential_design.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slates", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, default=100_000, help="replications of the idealised family")
    args = parser.parse_args()
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    ideal = pd.DataFrame([idealised(mu, args.reps, rng) for mu in (3.0, 4.0, 5.0, 6.0)]).set_index("mu")
    print("1. idealised: 45 independent tied pairs, one look, exact normal intervals, margin mu standard errors")
    print(ideal.to_string(float_format="%.3f"))
    bench = _bench()
    cols = [
        "median_call_fraction",
        "false_separation_rate_per_pair",
        "false_separation_family_sequential_only",
        "agreement",
    ]
    rows = {}
    original = sq.run_sequential
    for name, runner in (("bonferroni", original), ("step_down", run_step_down)):
        sq.run_sequential = runner
        try:
            for s in bench.SCENARIOS:
                r = bench.run_scenario(s, args.slates, args.seed)
                rows[(s.name, name)] = {c: r[c] for c in cols}
        finally:
            sq.run_sequential = original
    print(f"\n2. slates: bench/sequential_design.py's scenarios, {args.slates} slates each, seed {args.seed}")
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(pd.DataFrame(rows).T.unstack().swaplevel(axis=1).sort_index(axis=1).to_string())
    print(f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
