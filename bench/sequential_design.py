"""How the sequential design (eyt_dagster/core/sequential.py) compares with playing every item, on simulated slates.
Not a test: run it by hand; docs/eyt-metrics.md#stopping-when-the-ranking-is-settled quotes its output.

Each simulated slate has 10 targets and N = 100 items, with two metrics per item:

- `accuracy`, a 0-1 rate: the share of `turns` judged-correct turns, Binomial(turns, p) / turns with
  p = clip(mu_target + item difficulty, 0.01, 0.99) (the difficulty, N(0, 0.1), is shared by every target);
- `score`, a 1-5 rating: clip(mu_target + item difficulty + N(0, score_sd), 1, 5) (difficulty N(0, 0.3)).

The sequential design uses alpha 0.05, min_dialogues 20, batch 10 and the margins below; the full design plays
all N items and separates a pair as the pairwise table does: the paired mean difference with a two-sided
normal-approximation p-value (the sample standard error of the paired differences, where the table uses the
bootstrap's), Holm-adjusted over the 45 pairs of a metric, significant below 0.05. Figures:

- agreement: of the pairs the full design separates, the share the sequential design separates the same way (a
  pair undecided at N takes the full design's verdict: both targets played all N items);
- false separation: among pairs whose true means are equal, the share the sequential design (with that rule for
  undecided pairs) separates, per pair and per family (a metric of a slate with any such pair separated);
- median call fraction: items played / (targets x N), median over slates, on slates whose neighbouring targets'
  true means are at least twice the margin apart;
- the noise sweep: the spaced slates again at a range of per-item noise, with the median call fraction at `batch`
  10 and 5 and the *oracle* fraction beside it: the smallest N (in steps of 2) at which the full design, told in
  advance how many items to play, separates every neighbouring pair on both metrics in 95% of the slates. No
  design that must find the answer in the data can be expected to do much better than a fixed design that knew it,
  so the ratio of the two is what the sequential design's anytime validity costs.

    PYTHONPATH=. .venv/bin/python bench/sequential_design.py                 # 200 slates per scenario
    PYTHONPATH=. .venv/bin/python bench/sequential_design.py --slates 500 --seed 1 --json /tmp/sequential.json
    PYTHONPATH=. .venv/bin/python bench/sequential_design.py --no-sweep                      # the scenarios only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.core import sequential, stats  # noqa: E402

TARGETS = 10
N_ITEMS = 100
ALPHA = 0.05
METRICS = ("accuracy", "score")
MARGIN = {"accuracy": 0.04, "score": 0.15}
DESIGN = sequential.SequentialDesign(enabled=True, alpha=ALPHA, min_dialogues=20, batch=10, margin=MARGIN)
GOALS = {"agreement": 0.95, "false_separation_rate": ALPHA, "median_call_fraction": 0.4}


@dataclass(frozen=True)
class Scenario:
    """True means of the 10 targets per metric, and the per-item noise."""

    name: str
    what: str
    accuracy: tuple[float, ...]
    score: tuple[float, ...]
    turns: int  # judged turns per item of the accuracy metric
    score_sd: float
    spaced: bool  # neighbouring means at least 2 x margin apart on every metric

    def means(self) -> np.ndarray:
        return np.stack([np.array(self.accuracy), np.array(self.score)], axis=-1)  # targets x metrics


def _line(start: float, step: float) -> tuple[float, ...]:
    return tuple(round(start + step * k, 6) for k in range(TARGETS))


def _ties(start: float, step: float) -> tuple[float, ...]:
    return tuple(round(start + step * (k // 2), 6) for k in range(TARGETS))  # five pairs of equal means


SCENARIOS = (
    Scenario(
        "spaced_2m_quiet",
        "neighbours exactly 2 x margin apart; quieter score items (SD 0.2), SD(paired diff) about 1.9 x margin",
        _line(0.14, 2 * MARGIN["accuracy"]),
        _line(1.6, 2 * MARGIN["score"]),
        turns=40,
        score_sd=0.2,
        spaced=True,
    ),
    Scenario(
        "spaced_2m",
        "neighbours exactly 2 x margin apart; score item SD 0.3, SD(paired diff) about 2.9 x margin",
        _line(0.14, 2 * MARGIN["accuracy"]),
        _line(1.6, 2 * MARGIN["score"]),
        turns=40,
        score_sd=0.3,
        spaced=True,
    ),
    Scenario(
        "spaced_2m_noisy",
        "neighbours 2 x margin apart; accuracy over 10 turns, score item SD 0.6: SD(paired diff) about 5.6 x margin",
        _line(0.14, 2 * MARGIN["accuracy"]),
        _line(1.6, 2 * MARGIN["score"]),
        turns=10,
        score_sd=0.6,
        spaced=True,
    ),
    Scenario(
        "ties",
        "five pairs of equal means, the pairs 3 x margin apart",
        _ties(0.2, 3 * MARGIN["accuracy"]),
        _ties(2.0, 3 * MARGIN["score"]),
        turns=40,
        score_sd=0.3,
        spaced=False,
    ),
    Scenario(
        "all_equal",
        "all ten targets equal (every pair a tie)",
        (0.5,) * TARGETS,
        (3.0,) * TARGETS,
        turns=40,
        score_sd=0.3,
        spaced=False,
    ),
    Scenario(
        "close",
        "neighbours half a margin apart (differences too small to be worth resolving)",
        _line(0.32, 0.5 * MARGIN["accuracy"]),
        _line(2.3, 0.5 * MARGIN["score"]),
        turns=40,
        score_sd=0.3,
        spaced=False,
    ),
)


# The noise sweep: the spaced slates' means with (turns of the accuracy metric, score item SD) from quiet to noisy.
SWEEP = ((140, 0.16), (80, 0.21), (62, 0.24), (50, 0.265), (42, 0.29), (35, 0.32), (26, 0.37), (20, 0.42), (10, 0.6))
SWEEP_BATCHES = (10, 5)
ORACLE_POWER = 0.95


def simulate(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """One slate's per-item values: targets x items x metrics, items in playing order."""
    mu = scenario.means()
    p = np.clip(mu[:, 0][:, None] + rng.normal(0, 0.1, N_ITEMS)[None, :], 0.01, 0.99)
    accuracy = rng.binomial(scenario.turns, p) / scenario.turns
    raw = mu[:, 1][:, None] + rng.normal(0, 0.3, N_ITEMS)[None, :] + rng.normal(0, scenario.score_sd, p.shape)
    return np.stack([accuracy, np.clip(raw, 1.0, 5.0)], axis=-1)


def full_design(scores: np.ndarray) -> np.ndarray:
    """Per pair and metric (pairs x metrics): +1 if a is separated ahead of b on all items, -1 if behind, 0 if not
    separated. Paired mean difference, normal p-value from the sample standard error, Holm over a metric's pairs."""
    n_targets = scores.shape[0]
    pairs = list(combinations(range(n_targets), 2))
    a, b = (np.array([p[k] for p in pairs]) for k in (0, 1))
    d = scores[a] - scores[b]  # pairs x items x metrics
    keep = ~np.isnan(d)
    n = keep.sum(axis=1)
    diff = np.nanmean(d, axis=1)
    se = np.nanstd(d, axis=1, ddof=1) / np.sqrt(n)
    p = stats.normal_p_value(diff, se)
    out = np.zeros(diff.shape, dtype=int)
    for m in range(diff.shape[1]):
        significant = stats.holm_adjusted(p[:, m]) < ALPHA
        out[:, m] = np.where(significant, np.sign(diff[:, m]).astype(int), 0)
    return out


def neighbour_noise(scores: np.ndarray, margins: np.ndarray) -> float:
    """The standard deviation of a neighbouring pair's per-item difference over the metric's margin (mean over the
    neighbouring pairs, the larger of the metrics); the targets are in order of their true means."""
    neighbours = scores[1:] - scores[:-1]
    return float(np.max(np.std(neighbours, axis=1, ddof=1).mean(axis=0) / margins))


def oracle_fraction(slates: list[np.ndarray], power: float = ORACLE_POWER) -> float:
    """The smallest N / N_ITEMS (N even) at which the full design on the first N items separates every
    neighbouring pair on every metric in at least `power` of `slates`; 1.0 when even N_ITEMS does not."""
    pairs = list(combinations(range(TARGETS), 2))
    neighbours = [k for k, (a, b) in enumerate(pairs) if b == a + 1]
    for n in range(4, N_ITEMS + 1, 2):
        if np.mean([(full_design(s[:, :n])[neighbours] != 0).all() for s in slates]) >= power:
            return n / N_ITEMS
    return 1.0


def sweep(slates: int, seed: int) -> list[dict[str, float | int]]:
    """The spaced slates at each noise level of SWEEP: noise/margin, the median call fraction per batch size and
    the oracle fraction (module docstring)."""
    base = next(s for s in SCENARIOS if s.name == "spaced_2m")
    margins = np.array([MARGIN[m] for m in METRICS])
    rows = []
    for k, (turns, score_sd) in enumerate(SWEEP):
        scenario = Scenario(f"sweep_{k}", "", base.accuracy, base.score, turns, score_sd, spaced=True)
        rng = np.random.default_rng([seed, 100 + k])
        drawn = [simulate(scenario, rng) for _ in range(slates)]
        row: dict[str, float | int] = {
            "turns": turns,
            "score_sd": score_sd,
            "noise_to_margin": float(np.mean([neighbour_noise(s, margins) for s in drawn])),
        }
        for batch in SWEEP_BATCHES:
            design = sequential.SequentialDesign(
                enabled=True, alpha=ALPHA, min_dialogues=DESIGN.min_dialogues, batch=batch, margin=MARGIN
            )
            fractions = [sequential.run_sequential(s, design, N_ITEMS, metrics=METRICS).call_fraction for s in drawn]
            row[f"median_call_fraction_batch_{batch}"] = float(np.median(fractions))
        row["oracle_fraction"] = oracle_fraction(drawn)
        row["ratio_to_oracle"] = row[f"median_call_fraction_batch_{DESIGN.batch}"] / row["oracle_fraction"]
        rows.append(row)
    return rows


def final_direction(result: sequential.SequentialResult, full: np.ndarray) -> np.ndarray:
    """The sequential design's answer per pair and metric (pairs x metrics): +1 a ahead, -1 b ahead, 0 within the
    margin or not separated; a pair undecided at N takes the full design's verdict."""
    verdict = result.decisions["verdict"].to_numpy().reshape(full.shape)
    code = np.select([verdict == sequential.A_AHEAD, verdict == sequential.B_AHEAD], [1, -1], 0)
    undecided = result.decisions["undecided_at_n"].to_numpy().reshape(full.shape)
    return np.where(undecided, full, code)


def run_scenario(scenario: Scenario, slates: int, seed: int) -> dict[str, float | int | str | bool]:
    rng = np.random.default_rng([seed, SCENARIOS.index(scenario)])
    mu = scenario.means()
    pairs = list(combinations(range(TARGETS), 2))
    a, b = (np.array([p[k] for p in pairs]) for k in (0, 1))
    tied = np.isclose(mu[a], mu[b])  # pairs x metrics
    margins = np.array([MARGIN[m] for m in METRICS])
    true_sign = np.sign(mu[a] - mu[b])
    separated_full = agreed = 0
    false_pairs = tied_pairs = false_families = tied_families = 0
    false_families_cs = false_families_full = 0
    noise = []
    fractions, undecided, wrong_way = [], 0, 0
    for _ in range(slates):
        scores = simulate(scenario, rng)
        result = sequential.run_sequential(scores, DESIGN, N_ITEMS, metrics=METRICS)
        full = full_design(scores)
        final = final_direction(result, full)
        separated_full += int((full != 0).sum())
        agreed += int(((full != 0) & (final == full)).sum())
        false_sep = tied & (final != 0)
        false_pairs += int(false_sep.sum())
        tied_pairs += int(tied.sum())
        has_tie = tied.any(axis=0)
        tied_families += int(has_tie.sum())
        false_families += int(false_sep.any(axis=0).sum())
        verdict = result.decisions["verdict"].to_numpy().reshape(full.shape)
        cs_sep = np.isin(verdict, [sequential.A_AHEAD, sequential.B_AHEAD])
        false_families_cs += int((tied & cs_sep).any(axis=0).sum())
        false_families_full += int((tied & (full != 0)).any(axis=0).sum())
        noise.append(neighbour_noise(scores, margins))
        fractions.append(result.call_fraction)
        undecided += int(result.decisions["undecided_at_n"].sum())
        wrong_way += int(((final != 0) & (final == -true_sign) & ~tied).sum())
    return {
        "scenario": scenario.name,
        "what": scenario.what,
        "slates": slates,
        "pairs_separated_by_full_design": separated_full,
        "agreement": agreed / separated_full if separated_full else float("nan"),
        "tied_pairs": tied_pairs,
        "false_separation_rate_per_pair": false_pairs / tied_pairs if tied_pairs else float("nan"),
        "false_separation_rate_family": false_families / tied_families if tied_families else float("nan"),
        "false_separation_family_sequential_only": false_families_cs / tied_families if tied_families else float("nan"),
        "false_separation_family_full_design": false_families_full / tied_families if tied_families else float("nan"),
        "noise_to_margin": float(np.mean(noise)),
        "median_call_fraction": float(np.median(fractions)),
        "mean_call_fraction": float(np.mean(fractions)),
        "undecided_at_n_per_slate": undecided / slates,
        "wrong_way_separations": wrong_way,
        "spaced": scenario.spaced,
    }


def replay(long: pd.DataFrame, design: sequential.SequentialDesign, *, seed: int) -> dict[str, object]:
    """The sequential design replayed on a real run's per-item values: `long` has columns target, item, metric,
    value (one row per target, item and metric; every target played every item). Items are put in the design's
    seeded order (sequential.prefix_order); the metrics compared are those with a margin in `design`. Returns the
    call fraction, the agreement with the full design (None when it separates no pair), the items each target
    would have played, and the decision table."""
    metrics = [m for m in sorted(long["metric"].unique()) if m in design.margin]
    targets = sorted(long["target"].unique())
    items = sequential.prefix_order(long["item"].astype(str).unique(), seed)
    cube = (
        long.assign(item=long["item"].astype(str))
        .pivot_table(index=["target", "item"], columns="metric", values="value", aggfunc="mean")
        .reindex(pd.MultiIndex.from_product([targets, items], names=["target", "item"]))
        .reindex(columns=metrics)
        .to_numpy(float)
        .reshape(len(targets), len(items), len(metrics))
    )
    result = sequential.run_sequential(cube, design, len(items), metrics=metrics, targets=targets)
    full = full_design(cube)
    final = final_direction(result, full)
    separated = int((full != 0).sum())
    return {
        "call_fraction": result.call_fraction,
        "agreement": float(((full != 0) & (final == full)).sum() / separated) if separated else None,
        "items_played": dict(zip(targets, result.items_played.tolist(), strict=True)),
        "decisions": result.decisions,
    }


# Replaying a real run (--warehouse): the packaged pools hold a few dozen ChatSEEDs each, so the looks come sooner.
REAL_MARGIN = {"explicit_acc": 0.05, "emotion_acc": 0.05, "satisfaction": 0.1, "empathy": 5.0}
REAL_DESIGN = sequential.SequentialDesign(enabled=True, alpha=ALPHA, min_dialogues=10, batch=10, margin=REAL_MARGIN)


def replay_warehouse(database: Path, seed: int) -> list[dict[str, object]]:
    """The design replayed, pool by pool, on the per-dialogue values of a finished run (dialogue.dialogue_scores of
    the warehouse at `database`), with the targets that played every ChatSEED of the pool (the full design)."""
    import duckdb

    from eyt_dagster.eyt_bench.analysis import per_dialogue

    with duckdb.connect(str(database), read_only=True) as con:
        scores = con.execute("SELECT * FROM dialogue.dialogue_scores").df()
    out = []
    for pool, in_pool in scores.groupby("pool", sort=True):
        items = in_pool.groupby("target")["seed_id"].nunique()
        full = sorted(items[items == items.max()].index)
        played = (
            in_pool[in_pool["target"].isin(full)]
            .drop_duplicates(["target", "seed_id"])
            .set_index(["target", "seed_id"])
        )
        long = pd.concat(
            [
                per_dialogue(played, metric).rename("value").reset_index().assign(metric=metric)
                for metric in REAL_DESIGN.margin
            ]
        ).rename(columns={"seed_id": "item"})
        got = replay(long, REAL_DESIGN, seed=seed)
        decisions = got["decisions"]
        assert isinstance(decisions, pd.DataFrame)
        out.append(
            {
                "pool": pool,
                "targets": full,
                "chat_seeds": int(items.max()),
                "call_fraction": got["call_fraction"],
                "agreement": got["agreement"],
                "items_played": got["items_played"],
                "verdicts": decisions[["target_a", "target_b", "metric", "verdict", "decided_items"]].to_dict(
                    "records"
                ),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slates", type=int, default=200, help="simulated slates per scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the figures, goals and pass/fail here")
    parser.add_argument("--no-sweep", action="store_true", help="skip the noise sweep (about 10 s at 200 slates)")
    parser.add_argument(
        "--warehouse",
        type=Path,
        help="instead of simulating, replay the design on a finished run's eyt.duckdb (e.g. after `make run`: the "
        "embedded baselines on the packaged pools)",
    )
    args = parser.parse_args()
    if args.warehouse:
        found = replay_warehouse(args.warehouse, 20260521)
        for pool in found:
            print(
                f"{pool['pool']}: {len(pool['targets'])} targets x {pool['chat_seeds']} ChatSEEDs; call fraction "
                f"{pool['call_fraction']:.2f}; agreement with the full design {pool['agreement']}; played "
                f"{pool['items_played']}"
            )
            for v in pool["verdicts"]:  # type: ignore[attr-defined]
                print(f"  {v['metric']:<13} {v['target_a']} vs {v['target_b']}: {v['verdict']} at {v['decided_items']}")
        if args.json:
            args.json.write_text(json.dumps({"margin": REAL_MARGIN, "pools": found}, indent=2, default=str) + "\n")
        return
    t0 = time.perf_counter()
    rows = [run_scenario(s, args.slates, args.seed) for s in SCENARIOS]
    table = pd.DataFrame(rows).set_index("scenario")
    print(
        f"{args.slates} slates per scenario, {TARGETS} targets x {N_ITEMS} items, alpha {ALPHA}, "
        f"min_dialogues {DESIGN.min_dialogues}, batch {DESIGN.batch}, margins {MARGIN}, "
        f"t_opt {DESIGN.t_opt(N_ITEMS):.1f} items"
    )
    shown = [
        "noise_to_margin",
        "agreement",
        "false_separation_rate_per_pair",
        "false_separation_rate_family",
        "false_separation_family_sequential_only",
        "false_separation_family_full_design",
        "median_call_fraction",
        "undecided_at_n_per_slate",
        "wrong_way_separations",
    ]
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(table[shown].to_string())
    # the goals: agreement on every scenario (the worst), false separations where true means tie, the call
    # fraction on the spaced scenarios (each reported)
    agreement = float(table["agreement"].min())
    tied = table[table["tied_pairs"] > 0]
    false_pair = float(tied["false_separation_rate_per_pair"].max())
    false_family = float(tied["false_separation_rate_family"].max())
    false_family_cs = float(tied["false_separation_family_sequential_only"].max())
    false_family_full = float(tied["false_separation_family_full_design"].max())
    spaced = table[table["spaced"]]["median_call_fraction"]
    figures = {
        "agreement": {"value": agreement, "from": "minimum over all scenarios", "goal": GOALS["agreement"]},
        "false_separation_rate": {
            "value": false_pair,
            "family_wise": false_family,
            "family_wise_sequential_decisions_only": false_family_cs,
            "family_wise_full_design_alone": false_family_full,
            "from": "maximum over ties and all_equal: per pair (the goal); family-wise with undecided pairs handed "
            "to the full design at N, from the sequential decisions alone, and of the full design alone",
            "goal": GOALS["false_separation_rate"],
        },
        "median_call_fraction": {
            "value": {name: float(v) for name, v in spaced.items()},
            "from": "each spaced scenario",
            "goal": GOALS["median_call_fraction"],
        },
    }
    figures["agreement"]["pass"] = agreement >= GOALS["agreement"]
    figures["false_separation_rate"]["pass"] = false_pair <= GOALS["false_separation_rate"]
    figures["median_call_fraction"]["pass"] = {n: float(v) <= GOALS["median_call_fraction"] for n, v in spaced.items()}
    swept = [] if args.no_sweep else sweep(args.slates, args.seed)
    if swept:
        goal = GOALS["median_call_fraction"]
        column = f"median_call_fraction_batch_{DESIGN.batch}"
        met = [row["noise_to_margin"] for row in swept if row[column] <= goal]
        figures["median_call_fraction"]["goal_met_up_to_noise_to_margin"] = max(met) if met else None
        print()
        print(
            f"noise sweep (neighbours 2 x margin apart; oracle: the fixed N that separates every neighbouring pair "
            f"in {ORACLE_POWER:.0%} of slates):"
        )
        with pd.option_context("display.width", 200, "display.precision", 3):
            print(pd.DataFrame(swept).to_string(index=False))
    print()
    for name, f in figures.items():
        print(f"{name}: {f['value']} ({f['from']}); goal {f['goal']}; pass {f['pass']}")
        if "goal_met_up_to_noise_to_margin" in f:
            print(f"  met in the noise sweep up to noise/margin {f['goal_met_up_to_noise_to_margin']}")
    print(f"{time.perf_counter() - t0:.1f} s")
    if args.json:
        payload = {
            "settings": {
                "slates": args.slates,
                "seed": args.seed,
                "targets": TARGETS,
                "items": N_ITEMS,
                "alpha": ALPHA,
                "min_dialogues": DESIGN.min_dialogues,
                "batch": DESIGN.batch,
                "margin": MARGIN,
                "t_opt": DESIGN.t_opt(N_ITEMS),
            },
            "scenarios": rows,
            "noise_sweep": swept,
            "figures": figures,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
