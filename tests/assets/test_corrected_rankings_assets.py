"""The rankings-under-correction assets called with hand-made frames: their rows fit the table contracts, the
baseline flags are set and the metadata counts the groups compared and the rankings that change."""

from __future__ import annotations

import pandas as pd
import pytest

pytestmark = pytest.mark.unit

POOL = "nemotron_usa"
TARGETS = ("reflective-baseline", "terse-baseline")  # the default slate's embedded baselines


def judge_corrected(shown: tuple[str, str] = ("corrected", "corrected")) -> pd.DataFrame:
    """judge_corrected rows for both targets on Empathy (terse-baseline ahead once corrected) and FICR."""
    rows = []
    for metric, means in (("empathy", (50.0, 62.0)), ("ficr", (0.6, 0.5))):
        for target, mean, state in zip(TARGETS, means, shown):
            rows.append(
                {
                    "target": target,
                    "pool": POOL,
                    "metric": metric,
                    "n_labelled": 12,
                    "corrected_mean": mean,
                    "corrected_se": 2.0 if metric == "empathy" else 0.05,
                    "shown": state,
                }
            )
    return pd.DataFrame(rows)


def rank_intervals() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pool": POOL,
            "metric": ["empathy", "empathy", "ficr", "ficr"],
            "target": [*TARGETS, *TARGETS],
            "rank": pd.array([1, 2, 1, 2], dtype="Int64"),
            "rank_low": [1.0, 1.0, 1.0, 1.0],
            "rank_high": [2.0, 2.0, 2.0, 2.0],
        }
    )


def pairwise_comparisons() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pool": POOL,
            "metric": ["empathy", "ficr"],
            "target_a": TARGETS[0],
            "target_b": TARGETS[1],
            "diff": [4.0, 0.1],
            "ci_low": [1.0, -0.05],
            "ci_high": [7.0, 0.25],
            "significant_adjusted": pd.array([True, False], dtype="boolean"),
        }
    )


@pytest.fixture
def slate(monkeypatch, tmp_path):
    from eyt_dagster.slate import default_slate_path
    from resources.models.model_access import SlateAccess

    monkeypatch.setenv("EYT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("EYT_SLATE", raising=False)
    return SlateAccess(slate_path=str(default_slate_path()))


def _stored(df: pd.DataFrame, table: str) -> pd.DataFrame:
    """The frame as the warehouse stores it, cast to the table contract, whose columns it has in order."""
    from eyt_dagster.table_registry import TABLE_COLUMNS
    from resources.storage.warehouse_files import arrow_table

    assert list(df.columns) == list(TABLE_COLUMNS[table])
    return arrow_table(df, table, TABLE_COLUMNS[table]).to_pandas()


def test_corrected_rank_intervals_asset_flags_counts_and_fits_its_contract(slate):
    from assets.eyt_bench.corrected_rankings import corrected_rank_intervals

    out = corrected_rank_intervals(slate=slate, judge_corrected=judge_corrected(), rank_intervals=rank_intervals())
    stored = _stored(out.value, "dialogue.corrected_rank_intervals").set_index(["metric", "target"])
    assert stored.loc[("empathy", "terse-baseline"), "corrected_rank"] == 1
    assert stored.loc[("empathy", "terse-baseline"), "judge_rank"] == 2
    assert stored["rank_changed"].tolist() == [True, True, False, False]
    assert stored["is_baseline"].all() and not stored["self_preference_risk"].any()
    assert (stored["resamples"] == slate.slate.bootstrap_resamples).all()
    assert out.metadata["groups_compared"].value == 2
    assert out.metadata["rankings_changed"].value == 2
    assert "terse-baseline ranks 2nd judged alone, 1st corrected" in out.metadata["changes"].value


def test_corrected_pairwise_asset_flags_counts_and_fits_its_contract(slate):
    from assets.eyt_bench.corrected_rankings import corrected_pairwise

    out = corrected_pairwise(
        slate=slate, judge_corrected=judge_corrected(), pairwise_comparisons=pairwise_comparisons()
    )
    stored = _stored(out.value, "dialogue.corrected_pairwise").set_index("metric")
    # Empathy: the judge had reflective-baseline ahead (+4, significant); corrected, -12 with se sqrt(8): terse ahead
    assert stored.loc["empathy", "corrected_diff"] == pytest.approx(-12.0)
    assert stored.loc["empathy", "corrected_se"] == pytest.approx(8**0.5)
    assert (stored.loc["empathy", "judge_verdict"], stored.loc["empathy", "corrected_verdict"]) == (
        "a_better",
        "b_better",
    )
    # FICR: +0.1 with se sqrt(0.005) = 0.0707 (p 0.157) as the judge's: no clear difference either way
    assert stored["changed"].tolist() == [True, False]
    assert stored["is_baseline_pair"].all()
    assert out.metadata["groups_compared"].value == 2
    assert out.metadata["verdicts_changed"].value == 1


def test_the_assets_write_empty_tables_when_a_cell_is_judge_only(slate):
    from assets.eyt_bench.corrected_rankings import corrected_pairwise, corrected_rank_intervals

    mixed = judge_corrected(shown=("corrected", "judge only"))
    ranks = corrected_rank_intervals(slate=slate, judge_corrected=mixed, rank_intervals=rank_intervals())
    pairs = corrected_pairwise(slate=slate, judge_corrected=mixed, pairwise_comparisons=pairwise_comparisons())
    assert _stored(ranks.value, "dialogue.corrected_rank_intervals").empty
    assert _stored(pairs.value, "dialogue.corrected_pairwise").empty
    assert ranks.metadata["groups_compared"].value == 0 and ranks.metadata["changes"].value == "_none_"
    assert pairs.metadata["verdicts_changed"].value == 0
