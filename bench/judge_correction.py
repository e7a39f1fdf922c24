"""What the prediction-powered estimate (eyt_dagster/core/prediction_powered.py) does with a judge whose errors are
known, on simulated cells. Not a test: run it by hand; docs/eyt-metrics.md#judge-error-in-the-intervals-prediction-powered-estimates
quotes its output.

A simulated cell is one target's 1,000 items (dialogues) on a 1-5 rating, all scored by the judge, 100 of them
(a uniform random sample: the items are drawn independently, so the first 100 are one) also labelled by people.
Each item has a latent quality q ~ N(target's level, 0.8); the people's label is round(q + N(0, 0.5)) clipped to
1-5, the judge's round(q + leniency + N(0, judge noise)) clipped to 1-5. The truth a cell's interval should cover
is the expected human label of its target, computed exactly from the normal distribution (not simulated).

Cells come in slates of six targets, two families of three (levels 2.9, 3.2, 3.5 and 3.05, 3.35, 3.65), so every
pair of targets has a true order. Scenarios:

- uniform_leniency: the judge rates every target 0.5 too high (noise 0.5);
- family_leniency: the judge rates the first family 0.5 too high and the second fairly (noise 0.5), so pairs
  across the families come out in the wrong order;
- unbiased_noise: no leniency, judge noise 1.0.

Per scenario: coverage_corrected, coverage_judge_only and coverage_people_only (the share of cells whose 95%
interval holds the truth; the goal for the corrected one is at least 0.93), width_ratio (the corrected interval's
width over the people-only one's, mean over cells), the mean lambda and effective sample size, and over the 15
pairs of each slate: the share the judge alone orders wrongly, the share the corrected estimates order wrongly, and
of the pairs the judge alone gets wrong, the share the corrected estimates get right. Then a table of the
intervals' width against the number of human labels (25 to 400 of a cell's 1,000 items) for a good judge (noise
0.5) and a noisy one (noise 1.0), both 0.5 lenient, each with its correlation with the people's labels, and the
coverage of the corrected and the people-only intervals at each count.

    PYTHONPATH=. .venv/bin/python bench/judge_correction.py                          # 3,000 cells a scenario
    PYTHONPATH=. .venv/bin/python bench/judge_correction.py --cells 3000 --seed 1 --json /tmp/judge.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.core.prediction_powered import prediction_powered_mean  # noqa: E402

ITEMS = 1000  # judged items a cell
LABELS = 100  # of them with a human label
LEVELS = (2.9, 3.2, 3.5, 3.05, 3.35, 3.65)  # the latent level of each target of a slate
FAMILY = (0, 0, 0, 1, 1, 1)
QUALITY_SD, HUMAN_SD = 0.8, 0.5
LABEL_COUNTS = (25, 50, 100, 200, 400)
GOAL_COVERAGE = 0.93


@dataclass(frozen=True)
class Scenario:
    name: str
    leniency: tuple[float, ...]  # added to the judge's score, per target of the slate
    judge_sd: float


SCENARIOS = (
    Scenario("uniform_leniency", (0.5,) * 6, 0.5),
    Scenario("family_leniency", (0.5, 0.5, 0.5, 0.0, 0.0, 0.0), 0.5),
    Scenario("unbiased_noise", (0.0,) * 6, 1.0),
)
JUDGES = {"good judge (noise 0.5)": 0.5, "noisy judge (noise 1.0)": 1.0}  # both 0.5 lenient in the width table


def expected_label(level: float) -> float:
    """E[clip(round(q + e), 1, 5)] with q + e ~ N(level, sqrt(QUALITY_SD^2 + HUMAN_SD^2)), exactly."""
    spread = NormalDist(level, float(np.hypot(QUALITY_SD, HUMAN_SD)))
    below = [spread.cdf(k + 0.5) for k in range(1, 5)]  # P(label <= k) for k = 1..4
    return 5.0 - sum(below)  # E[X] = 1 + sum_{k=1..4} P(X > k) = 5 - sum P(X <= k)


def simulate(
    rng: np.random.Generator, slates: int, leniency: np.ndarray, judge_sd: float
) -> tuple[np.ndarray, np.ndarray]:
    """Human labels and judge scores, (slates x targets x items)."""
    shape = (slates, len(LEVELS), ITEMS)
    quality = np.asarray(LEVELS)[None, :, None] + rng.normal(0.0, QUALITY_SD, shape)
    human = np.clip(np.round(quality + rng.normal(0.0, HUMAN_SD, shape)), 1, 5)
    judged = np.clip(np.round(quality + leniency[None, :, None] + rng.normal(0.0, judge_sd, shape)), 1, 5)
    return human, judged


def cell_figures(human: np.ndarray, judged: np.ndarray, labels: int) -> dict[str, np.ndarray]:
    """The estimator on every cell of (slates x targets x items): estimates, bounds and the rest, each (slates x
    targets)."""
    keys = ("estimate", "low", "high", "judge_mean", "judge_low", "judge_high")
    keys += ("people_mean", "people_low", "people_high", "lam", "effective_n")
    out = {key: np.empty(human.shape[:2]) for key in keys}
    for s in range(human.shape[0]):
        for t in range(human.shape[1]):
            found = prediction_powered_mean(human[s, t, :labels], judged[s, t, :labels], judged[s, t, labels:])
            for key in keys:
                out[key][s, t] = getattr(found, key)
    return out


def covers(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> float:
    return float(((low <= truth) & (truth <= high)).mean())


def run_scenario(rng: np.random.Generator, scenario: Scenario, slates: int, truth: np.ndarray) -> dict[str, Any]:
    human, judged = simulate(rng, slates, np.asarray(scenario.leniency), scenario.judge_sd)
    f = cell_figures(human, judged, LABELS)
    judge_wrong = corrected_wrong = fixed = pairs = 0
    for a, b in combinations(range(len(LEVELS)), 2):
        order = np.sign(truth[a] - truth[b])
        judge_ok = np.sign(f["judge_mean"][:, a] - f["judge_mean"][:, b]) == order
        corrected_ok = np.sign(f["estimate"][:, a] - f["estimate"][:, b]) == order
        pairs += slates
        judge_wrong += int((~judge_ok).sum())
        corrected_wrong += int((~corrected_ok).sum())
        fixed += int((~judge_ok & corrected_ok).sum())
    ratio = (f["high"] - f["low"]) / (f["people_high"] - f["people_low"])
    return {
        "what": f"leniency {list(scenario.leniency)}, judge noise {scenario.judge_sd}",
        "cells": int(slates * len(LEVELS)),
        "coverage_corrected": covers(f["low"], f["high"], truth),
        "coverage_judge_only": covers(f["judge_low"], f["judge_high"], truth),
        "coverage_people_only": covers(f["people_low"], f["people_high"], truth),
        "width_ratio": float(ratio.mean()),
        "mean_lambda": float(f["lam"].mean()),
        "mean_effective_n": float(f["effective_n"].mean()),
        "pairs": pairs,
        "judge_wrong_pairs": judge_wrong,
        "judge_wrong_share": judge_wrong / pairs,
        "corrected_wrong_share": corrected_wrong / pairs,
        "judge_wrong_corrected_right": (fixed / judge_wrong) if judge_wrong else None,
        "goal_met": covers(f["low"], f["high"], truth) >= GOAL_COVERAGE,
    }


def width_table(rng: np.random.Generator, slates: int, truth: np.ndarray) -> list[dict[str, Any]]:
    rows = []
    for judge, judge_sd in JUDGES.items():
        human, judged = simulate(rng, slates, np.full(len(LEVELS), 0.5), judge_sd)
        correlation = float(np.corrcoef(human.ravel(), judged.ravel())[0, 1])
        for labels in LABEL_COUNTS:
            f = cell_figures(human, judged, labels)
            people, corrected = f["people_high"] - f["people_low"], f["high"] - f["low"]
            rows.append(
                {
                    "judge": judge,
                    "correlation": correlation,
                    "labels": labels,
                    "unlabelled": ITEMS - labels,
                    "people_width": float(people.mean()),
                    "corrected_width": float(corrected.mean()),
                    "width_ratio": float((corrected / people).mean()),
                    "mean_effective_n": float(f["effective_n"].mean()),
                    "coverage_corrected": covers(f["low"], f["high"], truth),
                    "coverage_people_only": covers(f["people_low"], f["people_high"], truth),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=3000, help="cells a scenario (rounded up to slates of 6)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--no-table", action="store_true", help="the scenarios only")
    args = parser.parse_args()
    slates = max(1, -(-args.cells // len(LEVELS)))
    rng = np.random.default_rng(args.seed)
    truth = np.array([expected_label(level) for level in LEVELS])
    started = time.perf_counter()
    scenarios = {s.name: run_scenario(rng, s, slates, truth) for s in SCENARIOS}
    print(
        f"{slates * len(LEVELS)} cells a scenario, {ITEMS} items a cell, {LABELS} with a human label, seed {args.seed}"
    )
    print(
        "| scenario | coverage corrected | judge only | people only | width ratio | lambda | effective n |"
        " judge wrong | corrected wrong | judge's wrong pairs put right |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in scenarios.items():
        fixed = r["judge_wrong_corrected_right"]
        put_right = "n/a" if fixed is None else f"{fixed:.1%} of {r['judge_wrong_pairs']}"
        print(
            f"| {name} | {r['coverage_corrected']:.3f} | {r['coverage_judge_only']:.3f} | "
            f"{r['coverage_people_only']:.3f} | {r['width_ratio']:.2f} | {r['mean_lambda']:.2f} | "
            f"{r['mean_effective_n']:.0f} | {r['judge_wrong_share']:.1%} | {r['corrected_wrong_share']:.1%} | "
            f"{put_right} |"
        )
    table = [] if args.no_table else width_table(rng, slates, truth)
    if table:
        print(
            "\n| judge | correlation | human labels | people-only width | corrected width | ratio | effective n |"
            " coverage corrected | people only |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in table:
            print(
                f"| {r['judge']} | {r['correlation']:.2f} | {r['labels']} | {r['people_width']:.3f} | "
                f"{r['corrected_width']:.3f} | {r['width_ratio']:.2f} | {r['mean_effective_n']:.0f} | "
                f"{r['coverage_corrected']:.3f} | {r['coverage_people_only']:.3f} |"
            )
    seconds = time.perf_counter() - started
    print(f"\n{seconds:.1f} s")
    if args.json:
        out = {
            "cells": slates * len(LEVELS),
            "items": ITEMS,
            "labels": LABELS,
            "seed": args.seed,
            "truth": dict(zip([f"target{k}" for k in range(len(LEVELS))], truth.tolist())),
            "scenarios": scenarios,
            "width_table": table,
            "seconds": seconds,
        }
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
