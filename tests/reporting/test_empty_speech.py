"""Every report step works when SpeechEQ has no rows for any target (nothing imported yet, or every speech target's
partition empty): the SEQ tables, the build summary, the model cards, the paper tables and the report's SpeechEQ
sections, each from frames with the tables' columns and no row."""

import pandas as pd
import pytest

from eyt_dagster.core.storage_types import conform
from eyt_dagster.reporting import paper_tables as pt
from eyt_dagster.reporting.model_cards import build_model_cards
from eyt_dagster.reporting.speech_sections import speech_sections
from eyt_dagster.slate import default_slate_path, load_slate
from eyt_dagster.speech_eq import seq_tables
from eyt_dagster.speech_eq import table_contracts as sc
from eyt_dagster.speech_eq.build_summary import build_summary
from eyt_dagster.speech_eq.human_ranking import HumanRanking
from eyt_dagster.speech_eq.rank_correlation import human_alignment


def empty(columns, table: str) -> pd.DataFrame:
    return conform(pd.DataFrame(columns=list(columns)), columns, table)


CHOICES = empty(sc.SLM_CHOICE_COLUMNS, "speech.slm_choices")


@pytest.mark.unit
def test_the_seq_tables_of_no_choice_are_empty_or_chance_only():
    board = seq_tables.seq_leaderboard(CHOICES, resamples=50, seed=1)
    assert set(board["target"]) <= {"chance"}
    assert len(seq_tables.seq_breakdown(CHOICES, resamples=50, seed=1)) == 0
    ranking = HumanRanking(pd.DataFrame({"target": ["a", "b"], "rank": [1, 2], "source": "test"}), None)
    alignment = human_alignment(CHOICES, ranking, resamples=50, seed=1)
    assert (alignment["n_targets"] == 0).all()  # one row per metric, saying no target had choices


@pytest.mark.unit
def test_the_build_summary_of_no_item_is_empty():
    summary = build_summary(
        empty(sc.SCENARIOS_COLUMNS, "speech.scenarios"),
        empty(sc.TONE_INSTRUCTIONS_COLUMNS, "speech.tone_instructions"),
        empty(sc.CONTRAST_SCORES_COLUMNS, "speech.contrast_scores"),
        empty(sc.EQ_ITEMS_COLUMNS, "speech.eq_items"),
    )
    assert len(summary) == 0 or int(summary["items"].sum()) == 0


@pytest.fixture(scope="module")
def text_only(warehouse):
    """The session warehouse's EYT-Bench tables, with every SpeechEQ table empty."""
    from pathlib import Path

    from resources.storage.report_reads import card_inputs

    con, _ = warehouse
    path = Path(
        con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    )
    inputs = card_inputs(path)
    # what the SEQ report asset writes from no choice: the chance rows only, in the table's types
    board = seq_tables.seq_leaderboard(CHOICES, resamples=50, seed=1)
    inputs["seq_board"] = conform(board, sc.SEQ_LEADERBOARD_COLUMNS, "speech.seq_leaderboard")
    inputs["choices"] = CHOICES[["target", "shared_call", "cost_usd", "prompt_hash"]]
    return path, inputs


@pytest.mark.materialisation
@pytest.mark.parametrize("shape", ["chance rows only", "no file yet"])
def test_the_model_cards_of_a_benchmark_without_rows(text_only, shape):
    _, inputs = text_only
    if shape == "no file yet":  # what report_reads.read_table gives for a table never written: columns, no dtype
        inputs = {
            **inputs,
            "seq_board": pd.DataFrame(columns=list(sc.SEQ_LEADERBOARD_COLUMNS)),
            "choices": pd.DataFrame(columns=["target", "shared_call", "cost_usd", "prompt_hash"]),
        }
    slate = load_slate(default_slate_path())
    cards = build_model_cards(slate, **inputs)
    assert {"reflective-baseline", "terse-baseline"} <= set(cards["target"])
    speech_only = cards[cards["target"].isin(["random-chooser-baseline", "acoustic-chooser-baseline"])]
    assert len(speech_only) == 0  # no SpeechEQ row: no card claims a SpeechEQ result


@pytest.mark.materialisation
def test_the_paper_tables_and_report_sections_of_an_empty_speecheq(text_only):
    _, inputs = text_only
    slate = load_slate(default_slate_path())
    sources = {name: pd.DataFrame() for name in pt.SOURCE_TABLES}
    sources["speech.seq_leaderboard"] = inputs["seq_board"]
    sources["speech.seq_breakdown"] = empty(sc.SEQ_BREAKDOWN_COLUMNS, "speech.seq_breakdown")
    sources["speech.seq_human_alignment"] = empty(sc.SEQ_HUMAN_ALIGNMENT_COLUMNS, "speech.seq_human_alignment")
    sources["reports.model_cards"] = build_model_cards(slate, **inputs)
    tables = pt.build_tables(sources)
    assert tables  # every table builds, a SpeechEQ one with no row
    sections = speech_sections(
        {
            "speech.seq_leaderboard": sources["speech.seq_leaderboard"],
            "speech.seq_breakdown": sources["speech.seq_breakdown"],
            "speech.seq_human_alignment": sources["speech.seq_human_alignment"],
            "speech.speech_build_report": empty(sc.SPEECH_BUILD_REPORT_COLUMNS, "speech.speech_build_report"),
            "speech.contrast_scores": empty(sc.CONTRAST_SCORES_COLUMNS, "speech.contrast_scores"),
        }
    )
    assert sections


@pytest.mark.unit
def test_the_build_summary_counts_the_folders_an_import_skipped():
    skips = pd.DataFrame(
        {"subscale": ["interpersonal_empathy"] * 2, "folder": ["a", "b"], "reason": ["scenario.title missing"] * 2}
    )
    summary = build_summary(
        empty(sc.SCENARIOS_COLUMNS, "speech.scenarios"),
        empty(sc.TONE_INSTRUCTIONS_COLUMNS, "speech.tone_instructions"),
        empty(sc.CONTRAST_SCORES_COLUMNS, "speech.contrast_scores"),
        empty(sc.EQ_ITEMS_COLUMNS, "speech.eq_items"),
        skips,
    )
    [row] = summary.to_dict("records")
    assert (row["subscale"], row["items"], row["skipped_folders"]) == ("interpersonal_empathy", 0, 2)
