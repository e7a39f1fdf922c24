"""Writes tests/core/confseq_reference.json: confseq's two-sided normal-mixture boundary over a grid, the values
eyt_dagster.core.sequential.normal_mixture_bound must reproduce. Not a test: run it by hand with a Python that has
confseq (confseq is not a project dependency: it builds a C++ extension against the Boost headers).

    python3 -m venv /tmp/confseq-venv
    /tmp/confseq-venv/bin/pip install numpy pybind11 scikit-build cmake
    /tmp/confseq-venv/bin/pip install --no-build-isolation confseq==0.0.11
    /tmp/confseq-venv/bin/python bench/confseq_reference.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
from confseq import boundaries

OUT = Path(__file__).resolve().parents[1] / "tests" / "core" / "confseq_reference.json"
V = [0.01, 0.5, 1.0, 2.0, 7.5, 20.0, 44.7, 100.0, 1000.0, 1e5]
ALPHA = [0.05, 0.05 / 45, 1e-4, 0.3]
V_OPT = [1.0, 20.0, 44.7, 100.0]
ALPHA_OPT = [0.05, 0.05 / 45]


def main() -> None:
    rows = []
    for alpha in ALPHA:
        for v_opt in V_OPT:
            for alpha_opt in ALPHA_OPT:
                bound = boundaries.normal_mixture_bound(
                    np.array(V), alpha, v_opt, alpha_opt=alpha_opt, is_one_sided=False
                )
                rows.append({"alpha": alpha, "v_opt": v_opt, "alpha_opt": alpha_opt, "v": V, "bound": bound.tolist()})
    OUT.write_text(json.dumps({"confseq": version("confseq"), "rows": rows}, indent=1) + "\n")
    print(f"wrote {len(rows)} rows x {len(V)} values to {OUT}")


if __name__ == "__main__":
    main()
