"""The reports' result cache: after one more target only its cells and pairs are computed (counted by the cache),
the tables equal a computation from scratch bit for bit, a changed cell is computed again, and processes writing the
cache file at once leave it whole and right."""

from __future__ import annotations

import multiprocessing
import sqlite3

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core import result_cache, stats
from eyt_dagster.eyt_bench import analysis, calibration
from eyt_dagster.eyt_bench import rank_intervals as ranks
from eyt_dagster.eyt_bench.dialogue_scoring import dialogue_lengths, turn_dimension_scores
from resources.storage.report_cache import REPORT_CACHE_FILE, ReportCache, open_report_cache

from support.warehouse_tables import warehouse_tables

pytestmark = pytest.mark.unit

RESAMPLES, SEED = 200, 7


def more_targets(n_extra: int = 3, seed: int = 5):
    """warehouse_tables' 4 targets x 2 pools and `n_extra` more: copies of target 0 with their values jittered
    (scores, turns, judge verdicts)."""
    scores, turns, verdicts, finals = warehouse_tables()
    rng = np.random.default_rng(seed)
    first = sorted(scores["target"].unique())[0]
    frames = {"scores": [scores], "turns": [turns], "verdicts": [verdicts], "finals": [finals]}
    for k in range(n_extra):
        name = f"zz-extra-{k}"
        extra = scores[scores["target"] == first].assign(target=name)
        extra["empathy"] = extra["empathy"] + rng.normal(0, 3, len(extra))
        extra["drift"] = extra["drift"] + rng.normal(0, 0.05, len(extra))
        judged = verdicts[verdicts["target"] == first].assign(target=name)
        for column in ("empathy_support", "persona_style", "anthro_flow"):  # one sub-indicator per dimension
            judged[column] = judged[column] + rng.choice([0.0, 0.5], len(judged))
        voted = finals[finals["target"] == first].assign(target=name)
        voted["completed"] = rng.random(len(voted)) < 0.5
        frames["scores"].append(extra)
        frames["turns"].append(turns[turns["target"] == first].assign(target=name))
        frames["verdicts"].append(judged)
        frames["finals"].append(voted)
    return tuple(pd.concat(f, ignore_index=True) for f in frames.values())


def without(target: str, frames: tuple[pd.DataFrame, ...]) -> tuple[pd.DataFrame, ...]:
    return tuple(f[f["target"] != target] for f in frames)


def tables(frames: tuple[pd.DataFrame, ...], store) -> dict[str, pd.DataFrame]:
    """Every report table the result cache serves, of (scores, turns, verdicts, finals)."""
    scores, turns, verdicts, finals = frames
    dims = turn_dimension_scores(verdicts)
    return {
        "agreement": calibration.agreement_table(verdicts, finals, store=store),
        "alpha": analysis.alpha_sensitivity(dims, dialogue_lengths(turns), (0.05, 0.1, 0.15), store=store),
        "intervals": analysis.leaderboard_intervals(scores, turns, resamples=RESAMPLES, seed=SEED, store=store),
        "pairwise": analysis.pairwise_comparisons(scores, resamples=RESAMPLES, seed=SEED, store=store),
        "ranks": ranks.rank_intervals(scores, resamples=RESAMPLES, seed=SEED, store=store),
    }


def assert_same(got: dict, want: dict) -> None:
    for name in want:
        assert len(want[name]) and want[name].notna().any().any()
        pd.testing.assert_frame_equal(got[name], want[name], check_exact=True, obj=name)


def test_one_more_target_computes_only_its_cells_and_pairs_and_equals_a_fresh_computation(tmp_path):
    frames = more_targets()
    before = without("zz-extra-2", frames)
    cells = before[0][["target", "pool"]].drop_duplicates()
    pools = sorted(cells["pool"].unique())
    per_pool = cells.groupby("pool")["target"].nunique()

    cache = ReportCache(tmp_path / REPORT_CACHE_FILE)
    tables(before, cache)
    first = dict(cache.counters.computed)
    assert first[analysis.INTERVAL_KIND] == first[analysis.ALPHA_KIND] == len(cells)
    assert first[calibration.AGREEMENT_KIND] == 4 * len(cells)  # three dimensions and completion
    assert first[analysis.PAIR_FIGURES_KIND] == sum(n * (n - 1) // 2 for n in per_pool)
    assert not any(cache.counters.found.values())

    again = ReportCache(tmp_path / REPORT_CACHE_FILE)  # a new process's view of the same file
    got = tables(frames, again)
    # the new target's cell of each pool, its pair with every other target of the pool, its resample means
    assert again.counters.computed[analysis.INTERVAL_KIND] == again.counters.computed[analysis.ALPHA_KIND] == len(pools)
    assert again.counters.found[analysis.INTERVAL_KIND] == again.counters.found[analysis.ALPHA_KIND] == len(cells)
    assert again.counters.computed[analysis.PAIR_FIGURES_KIND] == int(per_pool.sum())
    assert again.counters.found[analysis.PAIR_FIGURES_KIND] == first[analysis.PAIR_FIGURES_KIND]
    assert again.counters.computed[analysis.PAIR_MEANS_KIND] == len(pools)
    assert again.counters.computed[ranks.DRAWS_KIND] == len(pools)
    assert again.counters.computed[calibration.AGREEMENT_KIND] == 4 * len(pools)
    assert again.counters.found[calibration.AGREEMENT_KIND] == 4 * len(cells)
    assert_same(got, tables(frames, None))  # from scratch: a fresh store holds nothing


def test_a_changed_cell_is_computed_again_and_the_others_are_read(tmp_path):
    frames = more_targets()
    scores, turns, verdicts, finals = frames
    cache = ReportCache(tmp_path / REPORT_CACHE_FILE)
    tables(frames, cache)
    changed = scores.copy()
    target, pool = changed.loc[0, "target"], changed.loc[0, "pool"]
    changed.loc[0, "empathy"] += 1.5  # one dialogue of one cell
    others = changed[changed["pool"] == pool]["target"].nunique() - 1

    again = ReportCache(tmp_path / REPORT_CACHE_FILE)
    got = tables((changed, turns, verdicts, finals), again)
    assert again.counters.computed[analysis.INTERVAL_KIND] == 1
    assert again.counters.computed[analysis.ALPHA_KIND] == 0  # its turns and verdicts did not change
    assert again.counters.computed[analysis.PAIR_FIGURES_KIND] == others
    assert again.counters.computed[analysis.PAIR_MEANS_KIND] == 1
    assert again.counters.computed[ranks.DRAWS_KIND] == 1
    assert again.counters.computed[calibration.AGREEMENT_KIND] == 0
    want = tables((changed, turns, verdicts, finals), None)
    assert_same(got, want)
    before = tables(frames, None)["intervals"]
    cell = ["target", "pool", "metric"]
    moved = want["intervals"].set_index(cell)["value"].ne(before.set_index(cell)["value"])
    by_cell = moved.groupby(level=["target", "pool"]).any()
    assert by_cell.loc[(target, pool)] and by_cell.sum() == 1  # that cell's numbers moved, no other cell's

    judged = verdicts.copy()
    first = judged.index[(judged["target"] == target) & (judged["pool"] == pool)][0]
    judged.loc[first, "empathy_support"] += 0.5  # one verdict of the same cell
    third = ReportCache(tmp_path / REPORT_CACHE_FILE)
    assert_same(tables((changed, turns, judged, finals), third), tables((changed, turns, judged, finals), None))
    assert third.counters.computed[analysis.ALPHA_KIND] == 1
    assert third.counters.computed[calibration.AGREEMENT_KIND] == 1  # the empathy ratings of that cell
    assert third.counters.computed[analysis.INTERVAL_KIND] == 0


def test_other_settings_are_other_keys(tmp_path):
    scores, turns, _, _ = more_targets(1)
    cache = ReportCache(tmp_path / REPORT_CACHE_FILE)
    analysis.leaderboard_intervals(scores, turns, resamples=RESAMPLES, seed=SEED, store=cache)
    analysis.leaderboard_intervals(scores, turns, resamples=RESAMPLES, seed=SEED + 1, store=cache)
    analysis.leaderboard_intervals(scores, turns, resamples=RESAMPLES + 1, seed=SEED, store=cache)
    cells = len(scores[["target", "pool"]].drop_duplicates())
    assert cache.counters.computed[analysis.INTERVAL_KIND] == 3 * cells
    assert not cache.counters.found.get(analysis.INTERVAL_KIND)


def _write_in_process(path: str, worker: int, out) -> None:
    try:
        cache = ReportCache(path)
        got = tables(more_targets(), cache)
        out.put((worker, {k: v.to_json() for k, v in got.items()}, None))
    except BaseException as exc:  # reported to the test, which fails on it
        out.put((worker, None, repr(exc)))


def test_processes_writing_at_once_leave_one_right_copy_of_each_key(tmp_path):
    path = tmp_path / REPORT_CACHE_FILE
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_write_in_process, args=(str(path), k, out)) for k in range(3)]
    for w in workers:
        w.start()
    results = [out.get(timeout=240) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    assert [err for _, _, err in results] == [None, None, None]
    assert len({repr(sorted(r.items())) for _, r, _ in results}) == 1  # every process built the same tables

    frames = more_targets()
    reader = ReportCache(path)
    got = tables(frames, reader)
    assert not any(reader.counters.computed.values())  # all stored by the writers
    assert_same(got, tables(frames, None))
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        kinds = dict(db.execute("SELECT kind, count(*) FROM results GROUP BY kind").fetchall())
    cells = len(frames[0][["target", "pool"]].drop_duplicates())
    assert kinds[analysis.INTERVAL_KIND] == cells


def test_a_writer_that_fails_mid_write_stores_nothing(tmp_path):
    cache = ReportCache(tmp_path / REPORT_CACHE_FILE)

    class Boom(Exception):
        pass

    def items():
        yield "a", b"1"
        raise Boom

    with pytest.raises(Boom):
        cache.put_many("k", dict(items()))
    assert cache.get_many("k", ["a"]) == {}
    cache.put_many("k", {"a": b"1"})
    cache.put_many("k", {"a": b"1", "b": b"2"})
    assert cache.get_many("k", ["a", "b", "c"]) == {"a": b"1", "b": b"2"}


def test_the_switch_and_a_stored_value_of_the_wrong_size(tmp_path, monkeypatch):
    monkeypatch.setenv("EYT_REPORT_CACHE", "off")
    assert isinstance(open_report_cache(tmp_path), result_cache.MemoryStore)
    monkeypatch.delenv("EYT_REPORT_CACHE")
    store = open_report_cache(tmp_path)
    assert isinstance(store, ReportCache)
    store.put_many("kind", {"key": result_cache.encode(np.arange(3.0))})
    with pytest.raises(ValueError, match="clear the report cache"):
        result_cache.cached_arrays(store, "kind", ["key"], (4,), lambda which: [np.zeros(4) for _ in which])


def test_content_key_parts_do_not_run_into_each_other():
    assert result_cache.content_key("ab", "c") != result_cache.content_key("a", "bc")
    assert result_cache.content_key(np.array([1.0])) != result_cache.content_key(np.array([1], dtype=np.int64))
    assert result_cache.content_key(np.array([1.0, np.nan])) == result_cache.content_key(np.array([1.0, np.nan]))
    assert result_cache.content_key(np.array([[1.0, 2.0]])) != result_cache.content_key(np.array([[1.0], [2.0]]))
    assert result_cache.content_key(("a", 1)) != result_cache.content_key("a", 1)


def test_a_shared_read_is_a_copy_and_a_rewritten_partition_is_read_again(tmp_path):
    from resources.storage import shared_reads
    from resources.storage.warehouse import store_frame
    from resources.storage.warehouse_files import SCHEMA_FILE, data_files, read_files, table_dir, warehouse_root

    shared_reads.forget()
    frame = pd.DataFrame({"target": ["a", "a", "b"], "pool": "p", "value": [1.0, 2.0, 3.0]})
    store_frame(tmp_path, "dialogue.example", frame, partition_by=["pool", "target"])
    folder = table_dir(warehouse_root(tmp_path), "dialogue.example")
    reads = []

    def read():
        files = data_files(folder)
        reads.append(len(files))
        return read_files(files, folder)

    files = data_files(folder)
    first = shared_reads.shared_read(files, folder, [folder / SCHEMA_FILE], read)
    first.loc[0, "value"] = 99.0  # a step changing its input changes no other step's
    second = shared_reads.shared_read(files, folder, [folder / SCHEMA_FILE], read)
    assert reads == [2] and second["value"].tolist() == [1.0, 2.0, 3.0]
    store_frame(tmp_path, "dialogue.example", frame.assign(value=7.0).iloc[2:], partition_by=["pool", "target"])
    third = shared_reads.shared_read(files, folder, [folder / SCHEMA_FILE], read)
    assert reads == [2, 2] and third.sort_values("value")["value"].tolist() == [1.0, 2.0, 7.0]
    shared_reads.forget()


@pytest.mark.parametrize("judges", [2, 3, 4])
def test_alpha_from_summed_cell_coincidences_is_the_packages_alpha(judges):
    import krippendorff

    rng = np.random.default_rng(judges)
    ratings = rng.integers(0, 11, (judges, 600)).astype(float) / 2
    ratings[rng.random(ratings.shape) < 0.25] = np.nan
    domain = np.unique(ratings[~np.isnan(ratings)])
    summed = sum(
        (stats.coincidences(ratings[:, k : k + 41], domain) for k in range(0, 600, 41)), np.zeros((domain.size,) * 2)
    )
    for level in ("nominal", "ordinal", "interval"):
        want = krippendorff.alpha(reliability_data=ratings, level_of_measurement=level, value_domain=domain)
        got = stats.alpha_from_coincidences(summed, domain, level)
        if judges <= 3:  # a unit's pairs count 1 or 1/2: the sums are exact in any order
            assert got == want
        else:
            assert got == pytest.approx(want, rel=1e-12)


def test_a_figure_is_drawn_again_only_when_what_it_draws_changes(tmp_path):
    from eyt_dagster.reporting.plots import FIGURE_KIND, cached_png, targets_shown, turn_curves_png

    curves = pd.DataFrame(
        {
            "target": [f"t{k:02d}" for k in range(12) for _ in range(2)],
            "pool": "p",
            "dimension": "empathy",
            "turn": [1, 2] * 12,
            "mean_score": np.arange(24, dtype=float),
        }
    )
    cache = ReportCache(tmp_path / REPORT_CACHE_FILE)
    drawn = []

    def draw(rows):
        drawn.append(len(rows))
        return turn_curves_png(rows, title="t")

    shown, note = targets_shown(curves, "mean_score")
    assert shown["target"].nunique() == 10 and note == ": the 5 highest and 5 lowest targets"
    first = cached_png(cache, shown, draw, "curves", note)
    middle = curves[curves["target"] == "t05"].assign(target="t05b")  # a new target between the extremes
    again, _ = targets_shown(pd.concat([curves, middle]), "mean_score")
    assert cached_png(cache, again, draw, "curves", note) == first and drawn == [20]
    changed = shown.assign(mean_score=shown["mean_score"] + 1)
    assert cached_png(cache, changed, draw, "curves", note) != first and drawn == [20, 20]
    assert cache.counters.found[FIGURE_KIND] == 1 and cache.counters.computed[FIGURE_KIND] == 2


def test_the_pairwise_figure_is_kept_while_its_largest_differences_stay(tmp_path):
    import itertools

    from eyt_dagster.reporting.plots import FIGURE_KIND, MAX_PAIRS_SHOWN, cached_pairwise_png, pairwise_shown

    def pairs(targets: list[str], spread: dict[str, float]) -> pd.DataFrame:
        rows = [
            {"pool": "p", "metric": "empathy", "target_a": a, "target_b": b, "diff": spread[a] - spread[b]}
            for a, b in itertools.combinations(targets, 2)
        ]
        frame = pd.DataFrame(rows)
        return frame.assign(
            ci_low=frame["diff"] - 1, ci_high=frame["diff"] + 1, significant_adjusted=frame["diff"].abs() > 1
        )

    # 14 targets, 91 pairs: the figure draws the 40 largest |diff|, the 10 low ones (0 to 9) against the 4 high
    # ones (100 to 103)
    targets = [f"t{k:02d}" for k in range(14)]
    spread = {t: float(k if k < 10 else 90 + k) for k, t in enumerate(targets)}
    cache = ReportCache(tmp_path / REPORT_CACHE_FILE)
    first, drawn = cached_pairwise_png(cache, pairs(targets, spread), "empathy", {"t00"})
    shown, title = pairwise_shown(pairs(targets, spread), "empathy")
    assert drawn == len(shown) == MAX_PAIRS_SHOWN and title.endswith(f"the {MAX_PAIRS_SHOWN} largest |a − b| per pool")
    # a 15th target in the middle (50): its differences (at most 53) are below the 40th largest (91), the same figure
    middle = {**spread, "t05b": 50.0}
    again, _ = cached_pairwise_png(cache, pairs([*targets, "t05b"], middle), "empathy", {"t00"})
    assert again == first and cache.counters.found[FIGURE_KIND] == 1
    # a target beyond the extremes enters the largest differences: drawn again; so is another baseline's label
    beyond = {**spread, "t99": 500.0}
    assert cached_pairwise_png(cache, pairs([*targets, "t99"], beyond), "empathy", {"t00"})[0] != first
    assert cached_pairwise_png(cache, pairs(targets, spread), "empathy", {"t01"})[0] != first
    assert cache.counters.computed[FIGURE_KIND] == 3
