"""Intent embeddings while the dialogues run: a dialogue's texts are the same whether taken from the dialogue as it
ends or from the stored table, and its vectors are the same bits whenever and by whom they were encoded
(docs/throughput.md#intent-embeddings-while-the-dialogues-run)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core.errors import RoleCallError
from eyt_dagster.core.role_types import ChatSeed, Reply, SimulatorTurn, UserLabels
from eyt_dagster.eyt_bench.dialogue_loop import run_dialogues
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.intent_texts import dialogue_intent_texts, result_intent_texts, table_intent_groups
from eyt_dagster.eyt_bench.table_rows import TURN_COLUMNS, turn_rows
from resources.embedding_cache import EmbeddingCache
from resources.embedding_groups import GroupEncoder, embed_groups, encode_group
from resources.embeddings import OFFLINE_PACKAGE_MODEL, embed

MODEL = OFFLINE_PACKAGE_MODEL


def labels(description: str) -> UserLabels:
    return UserLabels(
        explicit_intent="seeking_advice",
        latent_intent="self_improvement",
        emotion="hope",
        intent_description=description,
    )


def seed(i: int) -> ChatSeed:
    return ChatSeed(
        seed_id=f"nemotron_usa:p{i}",
        pool="nemotron_usa",
        persona_id=f"p{i}",
        persona_text="A nurse in Ohio.",
        topic="night shifts",
        initial_emotion="anxiety",
        initial_explicit_intent="seeking_advice",
        initial_latent_intent="need_for_security",
        initial_intent_description=f"wants to sleep better ({i})",
        final_intent=f"The user has a sleep routine for night shifts ({i}).",
        first_query=f"How do I sleep after nights? p{i}",
    )


class Simulator:
    model_id = "sim"

    def next_turn(self, seed, history):
        turn = len(history) + 1
        progress = "achieved" if turn >= 3 else "in_progress"
        text = f"{seed.seed_id} turn {turn}"
        return Reply(
            value=SimulatorTurn(user_text=text, labels=labels(f"wants step {turn}"), progress=progress), raw=""
        )


class Target:
    model_id = "tgt"

    def perceive(self, history, query):
        if query.endswith("p3"):
            raise RoleCallError("server said 500")  # this dialogue fails: no texts, no rows
        return Reply(value=labels(f"perceived: {query}"), raw="")

    def respond(self, history, query):
        return Reply(value=f"reply to {query}", raw="")


def test_the_texts_handed_over_as_a_dialogue_ends_are_those_the_stored_table_gives(tmp_path):
    handed: dict[str, tuple[str, ...] | None] = {}
    seeds = [seed(i) for i in range(5)]
    results = run_dialogues(
        seeds,
        Simulator(),
        Target(),
        t_max=4,
        max_workers=3,
        on_result=lambda r: handed.update({r.seed.seed_id: result_intent_texts(r)}),
    )
    assert set(handed) == {s.seed_id for s in seeds}  # told of every dialogue, the failed one included
    assert handed["nemotron_usa:p3"] is None and results[3].error
    # the table as intent_similarity reads it: through Parquet, answered turns of finished dialogues
    rows = [row for r in results for row in turn_rows(r, "tgt")]
    pd.DataFrame(rows, columns=TURN_COLUMNS).to_parquet(tmp_path / "turns.parquet")
    stored = answered_turns(pd.read_parquet(tmp_path / "turns.parquet"))
    finals = pd.Series({s.seed_id: s.final_intent for s in seeds})
    groups = {seed_id: group for seed_id, _, group in table_intent_groups(stored, finals)}
    assert groups == {k: v for k, v in handed.items() if v is not None}
    # hand-checked: gold of each turn, then perceived of each turn, then the final intent; distinct, in order
    assert groups["nemotron_usa:p0"][0] == "wants to sleep better (0)"  # turn 1's gold: the ChatSEED's opening
    assert groups["nemotron_usa:p0"][-1] == "The user has a sleep routine for night shifts (0)."
    assert dialogue_intent_texts(["a", "b", "a"], ["b", "c"], "a") == ("a", "b", "c")


def test_a_group_gets_the_same_bits_early_late_busy_or_direct():
    group = ("wants a plan for night shifts", "perceived: wants to sleep", "The user has a routine.")
    others = [(f"other text {i}", f"a longer other text number {i} with more words") for i in range(6)]
    direct = encode_group(MODEL, group)

    early = GroupEncoder()
    early.submit(MODEL, group)
    deadline = time.monotonic() + 60
    while not early.submit(MODEL, group).done() and time.monotonic() < deadline:
        time.sleep(0.01)
    (vectors_early,), stats_early = embed_groups([group], MODEL, encoder=early)
    assert stats_early.ready == 1 and stats_early.encoded_on_request == 0

    busy = GroupEncoder()
    for other in others:  # the thread is encoding other groups when this one is asked for
        busy.submit(MODEL, other)
    (vectors_busy,), stats_busy = embed_groups([group], MODEL, encoder=busy)
    assert stats_busy.encoded_on_request == 1

    assert np.array_equal(vectors_early, direct) and np.array_equal(vectors_busy, direct)
    assert vectors_early.dtype == np.float32 and vectors_early.shape == (3, 384)
    # the same encoder as the rest of the project: equal to a whole-list encoding up to float rounding
    assert np.allclose(direct, embed(list(group)), atol=1e-5)
    assert np.allclose(np.linalg.norm(direct, axis=1), 1.0, atol=1e-5)


def test_the_embedding_cache_serves_a_group_it_stored(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    group = ("first text", "second text")
    first, stats = embed_groups([group], MODEL, cache=cache, encoder=GroupEncoder())
    assert stats.cached == 0 and stats.encoded_on_request == 1
    again, stats = embed_groups([group], MODEL, cache=cache, encoder=GroupEncoder())
    assert stats.cached == 1 and stats.encoded_on_request == 0
    assert np.array_equal(first[0], again[0])


def test_a_model_that_cannot_load_fails_every_group_at_once_until_forgotten():
    encoder = GroupEncoder()
    with pytest.raises(OSError, match="no-such-model"):
        embed_groups([("a",)], "no-such-model", encoder=encoder)
    later = encoder.submit("no-such-model", ("b",))
    assert later.done() and isinstance(later.exception(), OSError)  # no second load attempt
    encoder.forget()
    retry = encoder.submit("no-such-model", ("b",))
    with pytest.raises(OSError):
        retry.result(timeout=60)
