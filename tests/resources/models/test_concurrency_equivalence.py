"""Concurrency never changes what is computed: the same slate played one request at a time and with a budget
of 8 per endpoint gives the same rows (timing columns aside), and a rerun is served by the call cache."""

import duckdb
import pandas as pd
import pytest

from resources.models.endpoint_gates import gate_for
from resources.roles.speech_roles import SpeechRoles

from support.localhost_server import SchemaDrawnReplies, serve
from support.pipeline import materialize_dialogues
from support.slates import remote, write_slate

TABLES = (
    "chat_seeds",
    "dialogue_turns",
    "judge_verdicts",
    "final_intent_verdicts",
    "intent_similarity",  # embeddings encoded in the background while the dialogues ran: the same bits
    "dialogue_scores",
)
TIMING = ("created_at",)  # and every *_latency_s column


def play(tmp_path, name, budget):
    """One pool x one target with every role on its own stub server (so each run has its own endpoint gates)."""
    folder = tmp_path / name
    folder.mkdir()
    with serve(SchemaDrawnReplies(seed=3), delay_s=0.02) as server:
        slate = write_slate(
            folder,
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=4,
            t_max=4,
            simulator=remote("sim", server.base_url, max_concurrency=budget),
            targets=[remote("tgt", server.base_url, max_concurrency=budget)],
            judges=[remote("judge", server.base_url, max_concurrency=budget)],
            replacement_judge=None,
        )
        data = folder / "data"
        data.mkdir()
        materialize_dialogues(slate, data)
        first = len(server.chat_requests)
        # the most requests each endpoint (model) had in flight at once
        in_flight = {m: gate_for(server.base_url, f"{m}-v1", budget).max_in_flight for m in ("sim", "tgt", "judge")}
        materialize_dialogues(slate, data)  # a rerun: every call is in the cache
        again = len(server.chat_requests) - first
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    tables = {t: con.execute(f"SELECT * FROM dialogue.{t}").df() for t in TABLES}
    con.close()
    return tables, first, again, in_flight


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in df.columns if c not in TIMING and not c.endswith("latency_s")]
    keys = [c for c in ("target", "pool", "seed_id", "turn", "judge") if c in df.columns]
    return df[keep].sort_values(keys).reset_index(drop=True)


@pytest.mark.materialisation
def test_sequential_and_concurrent_runs_write_the_same_rows(tmp_path):
    sequential, calls_1, rerun_1, in_flight_1 = play(tmp_path, "one-at-a-time", 1)
    concurrent, calls_8, rerun_8, in_flight_8 = play(tmp_path, "budget-8", 8)
    # the runs really were scheduled differently: one request per endpoint at a time, and many
    assert in_flight_1 == {"sim": 1, "tgt": 1, "judge": 1}
    assert all(n > 1 for n in in_flight_8.values()), in_flight_8
    assert calls_1 == calls_8 and rerun_1 == rerun_8 == 0  # no extra call, and a rerun makes none
    for table in TABLES:
        assert len(sequential[table]) > 0
        pd.testing.assert_frame_equal(comparable(sequential[table]), comparable(concurrent[table]), check_exact=True)
    turns = concurrent["dialogue_turns"]
    for _, group in turns[turns["turn"] > 0].groupby("seed_id"):  # each dialogue's turns in order, none missing
        assert list(group["turn"]) == list(range(1, len(group) + 1))


def evaluate_speech(tmp_path, name, budget, items):
    """SpeechEQ choices of one remote audio target on its own stub server: the rows, the network calls of the
    first pass and of a rerun (fresh chooser, same call cache), and the most requests in flight at once."""
    from eyt_dagster.slate import load_slate
    from eyt_dagster.speech_eq.choice import system_prompt
    from eyt_dagster.speech_eq.evaluation import evaluate_items
    from resources.models.model_access import ModelAccess

    folder = tmp_path / name
    folder.mkdir()
    with serve(SchemaDrawnReplies(seed=5), delay_s=0.02) as server:
        target = {
            **remote("slm", server.base_url, max_concurrency=budget),
            "benchmarks": ["speech_eq"],
            "speech_input": "audio",
            "audio_format": "wav",
        }
        slate = write_slate(folder, targets=[target])
        conditions = {c: system_prompt(c) for c in ("default", "adaptive")}

        def once():
            models = ModelAccess(data_dir=str(folder / "data"))
            return evaluate_items(
                items,
                SpeechRoles(load_slate(slate), models).speech_target("slm"),
                conditions=conditions,
                seed=11,
                both_orders=True,
                inference=["sequential", "direct"],
                max_workers=budget,
            )

        rows = once()
        first = len(server.chat_requests)
        again_rows = once()
        again = len(server.chat_requests) - first
        in_flight = gate_for(server.base_url, "slm-v1", budget).max_in_flight
    return rows, again_rows, first, again, in_flight


@pytest.mark.unit
def test_speech_choices_are_the_same_one_at_a_time_and_concurrently(tmp_path):
    from support.speech_items import make_item

    # an audio target hears only the clips, so each item gets its own first clip (else items ask the same)
    items = [
        make_item(tmp_path / "clips", dataset_id=f"item-{n}", voices={"01": (150 + 20 * n, 0.2, 1.0)}) for n in range(3)
    ]
    sequential, rerun_1, calls_1, again_1, in_flight_1 = evaluate_speech(tmp_path, "one-at-a-time", 1, items)
    concurrent, rerun_8, calls_8, again_8, in_flight_8 = evaluate_speech(tmp_path, "budget-8", 8, items)
    # 3 items x 2 conditions x 2 orders: a round 1 and a round 2 per inference mode = 12 x 3 calls
    assert calls_1 == calls_8 == 36 and again_1 == again_8 == 0
    # rounds, not items, are the unit of work: more calls in flight than the 6 item x condition jobs
    assert in_flight_1 == 1 and in_flight_8 == 8, (in_flight_1, in_flight_8)

    # 12 trajectories x (round 1 stored per mode + round 2 per mode) = 48 rows, in the same order
    def strip(rows, drop=("latency_s",)):
        return [{k: v for k, v in r.items() if k not in drop} for r in rows]

    assert len(sequential) == 48
    assert strip(sequential) == strip(concurrent)
    # a rerun: the same rows, every asked round now a cache hit
    served = ("latency_s", "calls", "cache_hits")
    assert strip(rerun_1, served) == strip(rerun_8, served) == strip(sequential, served)
    asked = [n for n, r in enumerate(concurrent) if not r["shared_call"]]
    assert sum(rerun_8[n]["cache_hits"] for n in asked) == sum(concurrent[n]["calls"] for n in asked) == 36
    assert [(r["item_id"], r["condition"], r["order"], r["inference"], r["round"]) for r in concurrent[:4]] == [
        ("item-0", "default", "seeded", m, n) for m in ("sequential", "direct") for n in (1, 2)
    ]
