"""noise_floor and pass_k through the reports' result cache: the same tables as the whole-frame computation they
replaced (kept here as the reference), and after a new cell or a changed sample only those cells are computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core.result_cache import MemoryStore
from eyt_dagster.eyt_bench import noise_floor as nf
from eyt_dagster.eyt_bench.analysis import PAIRED_METRICS, per_dialogue
from eyt_dagster.eyt_bench.dialogue_scoring import DIMENSIONS

pytestmark = pytest.mark.unit

REPEATS, JUDGE_REPEATS = 3, 2


def reference_noise_floor(samples: pd.DataFrame, *, repeats: int, judge_repeats: int) -> pd.DataFrame:
    """noise_floor as it was: every cell and metric in one loop over the whole frame."""
    rows = []
    for (target, pool), cell in samples.groupby(nf.CELL, sort=True):
        indexed = cell.set_index(nf.SAMPLE)
        for metric in PAIRED_METRICS:
            values = per_dialogue(indexed, metric).astype(float)
            values = values[~values.index.duplicated()]
            rows.append(
                {
                    "target": target,
                    "pool": pool,
                    "metric": metric,
                    "repeats": repeats,
                    "judge_repeats": judge_repeats,
                    **nf._row(values, repeats, judge_repeats),
                }
            )
    return pd.DataFrame(rows, columns=nf.COLUMNS)


def reference_pass_k(samples: pd.DataFrame, *, repeats: int, judge_repeats: int) -> pd.DataFrame:
    """pass_k as it was: completion per repeat over the whole frame, then per cell."""
    return nf.cell_pass_k(samples, repeats=repeats, judge_repeats=judge_repeats)


def cell_samples(target: str, pool: str, rng: np.random.Generator, n_seeds: int = 7) -> pd.DataFrame:
    """Every (ChatSEED, repeat, judge repeat) sample of one cell, some values missing and some samples absent."""
    rows = []
    for s in range(n_seeds):
        for r in range(REPEATS):
            for q in range(JUDGE_REPEATS):
                if s == 0 and (r, q) == (2, 1):
                    continue  # one ChatSEED lacks a sample: left out of the balanced design
                n_turns = int(rng.integers(0, 6))
                row = {
                    "target": target,
                    "pool": pool,
                    "seed_id": f"seed-{s:02d}",
                    "repeat": r,
                    "judge_repeat": q,
                    "n_turns": n_turns,
                    "explicit_correct": int(rng.integers(0, n_turns + 1)),
                    "latent_correct": int(rng.integers(0, n_turns + 1)),
                    "emotion_correct": int(rng.integers(0, n_turns + 1)),
                    "drift": float(rng.random()),
                    "satisfaction": float(rng.integers(0, 11)) / 2,
                    "completed": [True, False, None][int(rng.integers(0, 3))],
                    **{d: float(rng.random() * 100) for d in DIMENSIONS},
                }
                if s == 1 and r == 1:
                    row["drift"] = float("nan")
                rows.append(row)
    return pd.DataFrame(rows)


def frame(cells: list[tuple[str, str]], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.concat([cell_samples(t, p, rng) for t, p in cells], ignore_index=True)


CELLS = [("target-b", "pool-1"), ("target-a", "pool-1"), ("target-a", "pool-2")]


def test_the_columns_the_samples_need_are_there():
    samples = frame(CELLS)
    for metric in PAIRED_METRICS:
        assert per_dialogue(samples, metric).notna().any(), metric


def test_noise_floor_and_pass_k_equal_the_whole_frame_computation():
    samples = frame(CELLS)
    for repeats, judge_repeats in ((REPEATS, JUDGE_REPEATS), (2, 1), (1, 1)):
        got = nf.noise_floor(samples, repeats=repeats, judge_repeats=judge_repeats)
        want = reference_noise_floor(samples, repeats=repeats, judge_repeats=judge_repeats)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        assert got["n_seeds"].gt(0).any() and got["sd_between"].notna().any()
        got_k = nf.pass_k(samples, repeats=repeats, judge_repeats=judge_repeats)
        want_k = reference_pass_k(samples, repeats=repeats, judge_repeats=judge_repeats)
        pd.testing.assert_frame_equal(got_k, want_k, check_exact=True)
        assert len(got_k) == len(CELLS) * repeats


def test_a_new_cell_and_a_changed_sample_are_all_that_is_computed():
    store = MemoryStore()
    samples = frame(CELLS)
    nf.noise_floor(samples, repeats=REPEATS, judge_repeats=JUDGE_REPEATS, store=store)
    nf.pass_k(samples, repeats=REPEATS, judge_repeats=JUDGE_REPEATS, store=store)
    assert store.counters.computed == {nf.NOISE_KIND: 3, nf.PASS_K_KIND: 3}

    more = pd.concat([samples, frame([("target-c", "pool-1")], seed=1)], ignore_index=True)
    changed = (more["target"] == "target-a") & (more["pool"] == "pool-2") & (more["seed_id"] == "seed-03")
    more.loc[changed & (more["repeat"] == 0), "empathy"] += 1.0
    more.loc[changed & (more["repeat"] == 1), "completed"] = True
    store.counters.found.clear()
    store.counters.computed.clear()
    got = nf.noise_floor(more, repeats=REPEATS, judge_repeats=JUDGE_REPEATS, store=store)
    got_k = nf.pass_k(more, repeats=REPEATS, judge_repeats=JUDGE_REPEATS, store=store)
    assert store.counters.computed == {nf.NOISE_KIND: 2, nf.PASS_K_KIND: 2}
    assert store.counters.found == {nf.NOISE_KIND: 2, nf.PASS_K_KIND: 2}
    pd.testing.assert_frame_equal(
        got, reference_noise_floor(more, repeats=REPEATS, judge_repeats=JUDGE_REPEATS), check_exact=True
    )
    pd.testing.assert_frame_equal(
        got_k, reference_pass_k(more, repeats=REPEATS, judge_repeats=JUDGE_REPEATS), check_exact=True
    )


def test_an_empty_frame_gives_empty_tables():
    empty = frame(CELLS).iloc[:0]
    assert nf.noise_floor(empty, repeats=1, judge_repeats=1).columns.tolist() == nf.COLUMNS
    assert nf.pass_k(empty, repeats=1, judge_repeats=1).empty
