"""Writes tests/core/ppi_reference.json: ppi_py's prediction-powered mean (PPI++) and its classical intervals on a
grid of seeded inputs, the values eyt_dagster.core.prediction_powered.prediction_powered_mean must reproduce. Not a
test: run it by hand with a Python that has ppi-python (not a project dependency: it pulls in numba, statsmodels
and scikit-learn).

    python3 -m venv /tmp/ppi-venv
    /tmp/ppi-venv/bin/pip install ppi-python
    /tmp/ppi-venv/bin/python bench/ppi_reference.py

Each case stores its inputs (the human labels Y and the judge's values Yhat on the n labelled items, the judge's
values Yhat~ on the N others), so the test does not depend on numpy's random streams, and ppi_py's figures at
alpha 0.05: `ppi_mean_pointestimate` and `ppi_mean_ci` with lambda tuned (its default: clipped to [0, 1]) and with
lambda fixed at 1, the tuned lambda itself (ppi_py's `_calc_lam_glm`, called as `ppi_mean_ci` calls it), and
`classical_mean_ci` over Y (people only) and over Yhat~ (judge only).

The grid: 1-5 ratings (a latent quality, the people's and the judge's noise, the judge's bias, rounded and
clipped), 0/1 labels (the judge's false-positive and false-negative rates) and 0-100 scores (two decimals), at
several (n, N), including n > N; plus a judge that scores the scale backwards (lambda clipped to 0) and one that
compresses it (lambda clipped to 1).
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.ppi import _calc_lam_glm

OUT = Path(__file__).resolve().parents[1] / "tests" / "core" / "ppi_reference.json"
ALPHA = 0.05
SIZES = [(5, 20), (30, 300), (100, 900), (400, 100)]


def likert(rng: np.random.Generator, size: int, bias: float, noise: float) -> tuple[np.ndarray, np.ndarray]:
    quality = rng.normal(3.2, 0.9, size)
    y = np.clip(np.round(quality + rng.normal(0, 0.5, size)), 1, 5)
    yhat = np.clip(np.round(quality + bias + rng.normal(0, noise, size)), 1, 5)
    return y, yhat


def binary(rng: np.random.Generator, size: int, fpr: float, fnr: float) -> tuple[np.ndarray, np.ndarray]:
    y = (rng.random(size) < 0.6).astype(float)
    flip = rng.random(size)
    yhat = np.where(y == 1, flip >= fnr, flip < fpr).astype(float)
    return y, yhat


def scores(rng: np.random.Generator, size: int, bias: float, noise: float) -> tuple[np.ndarray, np.ndarray]:
    quality = rng.normal(60, 15, size)
    y = np.round(np.clip(quality + rng.normal(0, 8, size), 0, 100), 2)
    yhat = np.round(np.clip(quality + bias + rng.normal(0, noise, size), 0, 100), 2)
    return y, yhat


def case(name: str, y: np.ndarray, yhat: np.ndarray, n: int) -> dict[str, Any]:
    Y, Yhat, Yhat_unlabeled = y[:n], yhat[:n], yhat[n:]
    point = ppi_mean_pointestimate(Y, Yhat, Yhat_unlabeled)
    low, high = ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=ALPHA)
    point1 = ppi_mean_pointestimate(Y, Yhat, Yhat_unlabeled, lam=1)
    low1, high1 = ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=ALPHA, lam=1)
    pointest1 = ppi_mean_pointestimate(Y, Yhat, Yhat_unlabeled, lam=1)  # how ppi_mean_ci tunes lambda
    lam = _calc_lam_glm(Y - pointest1, Yhat - pointest1, Yhat_unlabeled - pointest1, np.eye(1), coord=None, clip=True)
    people = classical_mean_ci(Y, alpha=ALPHA)
    judge = classical_mean_ci(Yhat_unlabeled, alpha=ALPHA)

    def scalar(x: Any) -> float:
        return float(np.asarray(x).reshape(-1)[0])

    def values(x: np.ndarray) -> list[float | int]:  # whole numbers written without ".0": a smaller file
        return [int(v) if v.is_integer() else v for v in x.tolist()]

    return {
        "name": name,
        "human": values(Y),
        "judged": values(Yhat),
        "judged_unlabelled": values(Yhat_unlabeled),
        "tuned": {"lam": scalar(lam), "estimate": scalar(point), "low": scalar(low), "high": scalar(high)},
        "lam1": {"estimate": scalar(point1), "low": scalar(low1), "high": scalar(high1)},
        "people": {"low": scalar(people[0]), "high": scalar(people[1])},
        "judge": {"low": scalar(judge[0]), "high": scalar(judge[1])},
    }


def main() -> None:
    rng = np.random.default_rng(20240601)
    cases = []
    for n, big_n in SIZES:
        for bias in (0.0, 0.5, -1.0):
            for noise in (0.3, 1.0):
                y, yhat = likert(rng, n + big_n, bias, noise)
                cases.append(case(f"likert n={n} N={big_n} bias={bias} noise={noise}", y, yhat, n))
        for fpr, fnr in ((0.05, 0.05), (0.3, 0.05), (0.5, 0.5)):
            y, yhat = binary(rng, n + big_n, fpr, fnr)
            cases.append(case(f"binary n={n} N={big_n} fpr={fpr} fnr={fnr}", y, yhat, n))
    for n, big_n in SIZES[1:3]:
        for bias in (0.0, 10.0):
            for noise in (5.0, 30.0):
                y, yhat = scores(rng, n + big_n, bias, noise)
                cases.append(case(f"scores n={n} N={big_n} bias={bias} noise={noise}", y, yhat, n))
    y, _ = likert(rng, 130, 0.0, 0.3)
    cases.append(case("likert backwards n=30 N=100 (lambda clipped to 0)", y, 6 - y, 30))
    y, _ = scores(rng, 330, 0.0, 5.0)
    compressed = np.round(50 + 0.3 * (y - 50) + rng.normal(0, 1, 330), 2)
    cases.append(case("scores compressed n=30 N=300 (lambda clipped to 1)", y, compressed, 30))
    OUT.write_text(
        '{"ppi_python": '
        + json.dumps(version("ppi-python"))
        + ', "alpha": '
        + json.dumps(ALPHA)
        + ', "cases": [\n'
        + ",\n".join(json.dumps(c) for c in cases)
        + "\n]}\n"
    )
    lams = [c["tuned"]["lam"] for c in cases]
    print(f"wrote {len(cases)} cases to {OUT} (tuned lambda from {min(lams):.3f} to {max(lams):.3f})")


if __name__ == "__main__":
    main()
