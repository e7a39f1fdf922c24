"""The whole EYT graph materialised in process for two targets x two pools into a temporary DuckDB file,
then checked with SQL, the way a user would query the warehouse."""

import itertools

import pytest

from eyt_dagster.eyt_bench.taxonomy import EMOTIONS, EXPLICIT_INTENTS, LATENT_INTENTS, SUBSCORE_COLUMNS

pytestmark = pytest.mark.materialisation


def q(con, sql):
    return con.execute(sql).fetchall()


def test_persona_pools_are_sampled_per_pool(warehouse):
    con, _ = warehouse
    rows = dict(q(con, "SELECT pool, count(*) FROM dialogue.persona_pool GROUP BY pool"))
    assert rows == {"nemotron_usa": 24, "personamem_v2": 24}  # pool_size 24 from a fixture of 60+
    assert q(
        con, "SELECT count(DISTINCT persona_id) = count(*) FROM dialogue.persona_pool WHERE pool = 'nemotron_usa'"
    ) == [(True,)]


def test_chat_seeds_one_per_persona_for_the_evaluation_slate(warehouse):
    con, _ = warehouse
    assert dict(q(con, "SELECT pool, count(*) FROM dialogue.chat_seeds WHERE error IS NULL GROUP BY pool")) == {
        "nemotron_usa": 4,
        "personamem_v2": 4,
    }
    # every seed belongs to a persona of the pool, and carries a one-sentence final intent
    orphans = q(
        con,
        """SELECT count(*) FROM dialogue.chat_seeds s LEFT JOIN dialogue.persona_pool p
                        ON s.pool = p.pool AND s.persona_id = p.persona_id WHERE p.persona_id IS NULL""",
    )
    assert orphans == [(0,)]
    assert q(con, "SELECT count(*) FROM dialogue.chat_seeds WHERE length(final_intent) < 10") == [(0,)]


def test_dialogue_turns_follow_algorithm_1(warehouse):
    con, _ = warehouse
    cells = q(
        con, "SELECT target, pool, count(DISTINCT seed_id) FROM dialogue.dialogue_turns GROUP BY ALL ORDER BY ALL"
    )
    assert [(t, p) for t, p, _ in cells] == [
        ("reflective-baseline", "nemotron_usa"),
        ("reflective-baseline", "personamem_v2"),
        ("terse-baseline", "nemotron_usa"),
        ("terse-baseline", "personamem_v2"),
    ]
    assert all(n == 4 for *_, n in cells)
    # turns are numbered 1..T_actual without gaps, 2 <= T_actual <= t_max (6)
    lengths = q(
        con,
        """SELECT max(turn), count(*), min(turn) FROM dialogue.dialogue_turns
                        WHERE error IS NULL GROUP BY target, pool, seed_id""",
    )
    assert all(mx == n and mn == 1 and 2 <= mx <= 6 for mx, n, mn in lengths)
    # a dialogue shorter than t_max ended on two consecutive 'achieved' reports
    early = q(
        con,
        """SELECT list(progress ORDER BY turn) FROM dialogue.dialogue_turns
                      GROUP BY target, pool, seed_id HAVING max(turn) < 6""",
    )
    assert early, "the reflective baseline should finish some dialogues early"
    assert all(
        p[-2:] == ["achieved", "achieved"]
        and "achieved" not in [a for a, b in itertools.pairwise(p[:-1]) if a == b == "achieved"]
        for (p,) in early
    )
    labels = q(
        con,
        "SELECT DISTINCT gold_explicit_intent, pred_explicit_intent, gold_latent_intent, pred_latent_intent,"
        " gold_emotion, pred_emotion FROM dialogue.dialogue_turns",
    )
    for ge, pe, gl, pl, gm, pm in labels:
        assert {ge, pe} <= set(EXPLICIT_INTENTS) and {gl, pl} <= set(LATENT_INTENTS) and {gm, pm} <= set(EMOTIONS)
    assert q(con, "SELECT DISTINCT prompt_hash IS NOT NULL, simulator FROM dialogue.dialogue_turns") == [
        (True, "rule-simulator")
    ]


def test_judge_verdicts_cover_every_turn_with_scores_on_the_scale(warehouse):
    con, _ = warehouse
    missing = q(
        con,
        """SELECT count(*) FROM dialogue.dialogue_turns t LEFT JOIN dialogue.judge_verdicts v
                        USING (target, pool, seed_id, turn) WHERE v.judge IS NULL""",
    )
    assert missing == [(0,)]
    allowed = " AND ".join(f"{c} IN (0, 0.5, 1)" for c in SUBSCORE_COLUMNS)
    assert q(con, f"SELECT count(*) FROM dialogue.judge_verdicts WHERE NOT ({allowed})") == [(0,)]
    assert q(con, "SELECT DISTINCT judge FROM dialogue.judge_verdicts ORDER BY 1") == [
        ("rubric-judge",),
        ("rubric-judge-strict",),
    ]
    # every judged turn has one row per judge
    assert q(con, "SELECT DISTINCT count(*) FROM dialogue.judge_verdicts GROUP BY target, pool, seed_id, turn") == [
        (2,)
    ]
    assert q(con, "SELECT count(*) FROM dialogue.judge_verdicts WHERE raw_reply IS NULL") == [(0,)]


def test_final_intent_verdicts_one_per_dialogue(warehouse):
    con, _ = warehouse
    assert q(con, "SELECT count(*), count(DISTINCT (target, pool, seed_id)) FROM dialogue.final_intent_verdicts") == [
        (32, 16)
    ]
    assert q(con, "SELECT min(satisfaction) >= 1 AND max(satisfaction) <= 5 FROM dialogue.final_intent_verdicts") == [
        (True,)
    ]


def test_leaderboard_matches_the_raw_rows(warehouse):
    con, _ = warehouse
    board = con.execute("SELECT * FROM dialogue.leaderboard ORDER BY pool, target").df()
    assert len(board) == 4 and board["is_baseline"].all()
    # recompute a few headline numbers straight from the raw tables
    raw = con.execute("""
        SELECT target, pool,
               avg((gold_explicit_intent = pred_explicit_intent)::INT) AS explicit_acc,
               avg((gold_emotion = pred_emotion)::INT) AS emotion_acc,
               count(DISTINCT seed_id) AS n_dialogues
        FROM dialogue.dialogue_turns WHERE error IS NULL GROUP BY ALL ORDER BY pool, target""").df()
    for col in ("explicit_acc", "emotion_acc", "n_dialogues"):
        assert list(board[col].round(9)) == list(raw[col].round(9))
    ficr = con.execute("""SELECT target, pool, avg((2 * votes > judges)::INT) AS ficr, avg((sat - 1) * 25) AS sat
                          FROM (SELECT target, pool, seed_id, sum(completed::INT) AS votes, count(*) AS judges,
                                       avg(satisfaction) AS sat
                                FROM dialogue.final_intent_verdicts GROUP BY ALL)
                          GROUP BY ALL ORDER BY pool, target""").df()
    assert list(board["ficr"].round(9)) == list(ficr["ficr"].round(9))
    assert list(board["satisfaction"].round(9)) == list(ficr["sat"].round(9))
    unweighted = con.execute(f"""SELECT target, pool, avg(({" + ".join(c for c in SUBSCORE_COLUMNS if c.startswith("empathy_"))}) * 20) AS e
                                FROM dialogue.judge_verdicts GROUP BY ALL ORDER BY pool, target""").df()
    assert list(board["empathy_unweighted"].round(9)) == list(unweighted["e"].round(9))


def test_reflective_baseline_beats_terse_baseline(warehouse):
    con, _ = warehouse
    board = con.execute("SELECT * FROM dialogue.leaderboard").df().set_index(["target", "pool"])
    for pool in ("nemotron_usa", "personamem_v2"):
        good, bad = board.loc[("reflective-baseline", pool)], board.loc[("terse-baseline", pool)]
        assert good["empathy"] > bad["empathy"] and good["ficr"] >= bad["ficr"] and good["drift"] < bad["drift"]


def test_runs_and_materialisations_are_recorded_in_the_instance(warehouse):
    _, instance = warehouse
    from dagster import AssetKey

    records = instance.fetch_materializations(AssetKey(["dialogue", "dialogue_turns"]), limit=10).records
    assert len(records) == 4  # one per target x pool partition
    meta = records[0].asset_materialization.metadata
    assert {"dagster/row_count", "preview", "prompt_hash", "target_tokens"} <= set(meta)
    # each partition's materialisation links to its cell's dialogues in eyt view (the default address)
    from urllib.parse import parse_qs, urlsplit

    from eyt_dagster.core.explorer_links import DEFAULT_VIEW_URL

    cells = set()
    for record in records:
        link = urlsplit(record.asset_materialization.metadata["explorer"].value)
        assert f"{link.scheme}://{link.netloc}" == DEFAULT_VIEW_URL and link.path == "/dialogues"
        keys = record.asset_materialization.partition.split("|")
        query = parse_qs(link.query)
        cells.add((query["target"][0], query["pool"][0]))
        assert set(keys) == {query["target"][0], query["pool"][0]}
    assert len(cells) == 4
    board = instance.get_latest_materialization_event(AssetKey(["dialogue", "leaderboard"]))
    assert board.asset_materialization.metadata["explorer"].value == DEFAULT_VIEW_URL + "/"


def test_sql_twin_reproduces_the_leaderboard(warehouse):
    """sql/leaderboard.sql recomputes every headline number from the raw rows."""
    from pathlib import Path

    con, _ = warehouse  # read-only: the view is a temporary one
    sql = Path(__file__).parents[1] / "sql"
    for name in ("turn_dimensions", "leaderboard"):  # leaderboard.sql reads only raw rows and this view
        con.execute((sql / f"{name}.sql").read_text())
    twin = con.execute("SELECT * FROM leaderboard_sql ORDER BY pool, target").df()
    asset = con.execute(f"SELECT {', '.join(twin.columns)} FROM dialogue.leaderboard ORDER BY pool, target").df()
    for column in twin.columns:
        if twin[column].dtype.kind in "fi":
            assert twin[column].to_numpy() == pytest.approx(asset[column].to_numpy(), abs=1e-9), column
        else:
            assert list(twin[column]) == list(asset[column]), column


def test_every_table_is_stored_with_its_contract_columns_and_types(warehouse):
    """Each view has its contract's columns in order with their DuckDB types, also a table that is empty on this
    slate (thinking_ablation: no reasoning pair; seq_human_alignment: no human ranking), whose all-missing
    columns were text before they were declared."""
    from eyt_dagster.core.storage_types import duckdb_columns
    from eyt_dagster.table_registry import TABLE_COLUMNS

    con, _ = warehouse
    for table, columns in TABLE_COLUMNS.items():
        stored = [(name, kind) for name, kind, *_ in con.execute(f"DESCRIBE {table}").fetchall()]
        assert stored == list(duckdb_columns(columns).items()), table
    for table, column, kind in (
        ("dialogue.thinking_ablation", "delta", "DOUBLE"),
        ("speech.seq_human_alignment", "rho", "DOUBLE"),
    ):
        assert q(con, f"SELECT count(*) FROM {table}") == [(0,)]
        assert dict((r[0], r[1]) for r in q(con, f"DESCRIBE {table}"))[column] == kind


def test_intent_embeddings_were_handed_over_while_the_dialogues_ran(warehouse):
    """Every intent text of the finished dialogues reached the background encoder from dialogue_turns, so
    intent_similarity asked for none anew (docs/throughput.md#intent-embeddings-while-the-dialogues-run)."""
    con, instance = warehouse
    from dagster import AssetKey

    records = instance.fetch_materializations(AssetKey(["dialogue", "intent_similarity"]), limit=10).records
    assert len(records) == 4
    texts = {}
    for record in records:
        meta = {k: v.value for k, v in record.asset_materialization.metadata.items()}
        assert meta["texts"] > 0 and meta["texts_encoded_on_request"] == 0, meta
        assert meta["texts_ready"] + meta["texts_under_way"] == meta["texts"], meta
        assert meta["embedding_backend"] == "onnxruntime"
        texts[record.partition_key.keys_by_dimension["target"], record.partition_key.keys_by_dimension["pool"]] = meta[
            "texts"
        ]
    # the count is that of the distinct texts of answered turns of finished dialogues, and their final intents
    expected = con.execute(
        """
        WITH answered AS (
            SELECT * FROM dialogue.dialogue_turns WHERE turn > 0 AND error IS NULL AND complete
        )
        SELECT target, pool, count(DISTINCT text) FROM (
            SELECT target, pool, gold_intent_description AS text FROM answered
            UNION ALL SELECT target, pool, pred_intent_description FROM answered
            UNION ALL SELECT a.target, a.pool, s.final_intent FROM answered a
                JOIN dialogue.chat_seeds s USING (pool, seed_id)
        ) GROUP BY ALL
        """
    ).fetchall()
    assert texts == {(t, p): n for t, p, n in expected}


def test_the_simulator_audit_of_the_embedded_simulator(warehouse):
    """The rule-based simulator never leaks a latent intent, flips role, goes empty or ends at once; it cycles
    through a few frustrated lines when the terse baseline does not help, and the audit flags exactly that."""
    con, _ = warehouse
    audit = con.execute("SELECT * FROM dialogue.simulator_audit").df()
    finished = con.execute("SELECT count(*) FROM dialogue.dialogue_scores").fetchone()[0]
    assert audit.drop_duplicates(["target", "pool", "seed_id"]).shape[0] == finished
    assert not audit[["latent_leak", "role_flip", "empty_turn", "early_end"]].any().any()
    assert audit["leak_cosine"].max() < 0.55
    flagged = audit[audit["flagged"]]
    assert set(flagged["simulator_flags"]) <= {"repetition"}
    rates = con.execute("SELECT target, avg(simulator_flag_rate) FROM dialogue.leaderboard GROUP BY 1").fetchall()
    rates = dict(rates)
    assert rates["terse-baseline"] > 0.5 > rates["reflective-baseline"]
    effect = con.execute("SELECT * FROM dialogue.simulator_audit_effect").df()
    assert (effect["n_flagged"] <= effect["n_dialogues"]).all()
    assert (effect["rank_changed"] == (effect["rank_all"] != effect["rank_unflagged"])).all()
    terse = effect[(effect["target"] == "terse-baseline")]
    assert (terse["flag_rate"] > 0.5).all()
    none_left = effect["n_flagged"] == effect["n_dialogues"]  # no unflagged dialogue: no value without them
    assert effect.loc[none_left, "value_unflagged"].isna().all()
    assert effect.loc[~none_left & effect["value_all"].notna(), "value_unflagged"].notna().all()
