"""bench/explorer_pages.py's synthetic warehouse (row counts of a small one), and the explorer reading only the
partition folders a page names. No timing here: the bench is run by hand (docs/explorer.md)."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from eyt_dagster.explorer import queries
from eyt_dagster.explorer.reads import Warehouse

pytestmark = pytest.mark.unit

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "explorer_pages.py"


def bench():
    spec = importlib.util.spec_from_file_location("explorer_pages", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_synthetic_warehouse_has_the_rows_its_sizes_make(tmp_path):
    b = bench()
    counts = b.synthesise(tmp_path, n_targets=3, pools=("nemotron_usa", "personamem_v2"), n_dialogues=4, n_turns=2)
    dialogues = 3 * 2 * 4
    assert counts == {
        "dialogue.chat_seeds": 2 * 4,
        "dialogue.dialogue_turns": dialogues * 2,
        "dialogue.intent_similarity": dialogues * 2,
        "dialogue.judge_verdicts": dialogues * 2 * len(b.JUDGES),
        "dialogue.final_intent_verdicts": dialogues * len(b.JUDGES),
        "dialogue.dialogue_scores": dialogues,
        "dialogue.leaderboard": 3 * 2,
        "dialogue.human_annotations": 2 * 2 * 3,
        # a ChatSEED each, per turn a perception and a reply, a simulator turn after the first, the judges' verdicts
        "ledger": 8 + dialogues * (2 * 2 + 1) + dialogues * 2 * len(b.JUDGES) + dialogues * len(b.JUDGES),
    }
    wh = Warehouse(tmp_path)
    assert queries.targets(wh) == [b.target_name(k) for k in range(3)]
    stored = wh.query(["dialogue.judge_verdicts"], "SELECT count(*) AS n FROM judge_verdicts")
    assert int(stored["n"].iloc[0]) == counts["dialogue.judge_verdicts"]
    with sqlite3.connect(tmp_path / "cache" / "model_calls.sqlite") as con:
        assert con.execute("SELECT count(*) FROM ledger").fetchone()[0] == counts["ledger"]
    # every page the bench times answers
    urls = b.pages(3, 4)
    assert len(urls) == 9 and all(u.startswith("/") for u in urls.values())


def test_a_partition_filter_reads_only_those_folders(tmp_path):
    bench().synthesise(tmp_path, n_targets=3, pools=("nemotron_usa", "personamem_v2"), n_dialogues=2, n_turns=1)
    wh = Warehouse(tmp_path)
    every = wh.files("dialogue.dialogue_scores")
    one = wh.files("dialogue.dialogue_scores", {"target": "target-001", "pool": "nemotron_usa"})
    pool = wh.files("dialogue.dialogue_scores", {"pool": "personamem_v2"})
    assert (len(every), len(one), len(pool)) == (6, 1, 3)  # store_frame writes no schema file
    assert "target=target-001" in one[0] and all("pool=personamem_v2" in f for f in pool)
    two = wh.query(
        ["dialogue.dialogue_scores"],
        "SELECT DISTINCT target FROM dialogue_scores ORDER BY target",
        partitions={"target": ["target-000", "target-002"]},
    )
    assert list(two["target"]) == ["target-000", "target-002"]
    assert wh.partition_values("dialogue.dialogue_turns", "target") == {"target-000", "target-001", "target-002"}
    assert wh.partition_values("dialogue.leaderboard", "target") is None  # one unpartitioned file
