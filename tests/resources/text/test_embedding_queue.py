"""Intent embeddings while the dialogues run: the texts handed over as turns end are those the stored table gives,
and a text's vector is the same bits whenever and by whom it was encoded
(docs/throughput.md#intent-embeddings-while-the-dialogues-run)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core.errors import RoleCallError
from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.dialogue_loop import run_dialogues
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.intent_texts import table_intent_texts, turn_intent_texts
from eyt_dagster.eyt_bench.table_rows import TURN_COLUMNS, turn_rows
from eyt_dagster.eyt_bench.types import ChatSeed, SimulatorTurn, UserLabels
from resources.text.embedding_cache import EmbeddingCache
from resources.text.embedding_queue import EmbeddingQueue, embed_queued, encode_alone, hand_over
from resources.text.embeddings import OFFLINE_PACKAGE_MODEL, embed

pytestmark = pytest.mark.unit

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


def test_the_texts_handed_over_as_turns_end_are_those_the_stored_table_gives(tmp_path):
    handed: dict[str, list[str]] = {}
    seeds = [seed(i) for i in range(5)]

    def on_turn(seed, turn):
        handed.setdefault(seed.seed_id, []).extend(turn_intent_texts(seed, turn))

    results = run_dialogues(seeds, Simulator(), Target(), t_max=4, max_workers=3, on_turn=on_turn)
    assert results[3].error and "nemotron_usa:p3" not in handed  # failed before its first turn was answered
    assert [len(r.turns) for r in results] == [3, 3, 3, 0, 3]
    # hand-checked: turn 1 gives its gold (the ChatSEED's opening description), its perceived one and the final
    # intent; later turns their two descriptions
    assert handed["nemotron_usa:p0"][:3] == [
        "wants to sleep better (0)",
        "perceived: How do I sleep after nights? p0",
        "The user has a sleep routine for night shifts (0).",
    ]
    assert handed["nemotron_usa:p0"][3:5] == ["wants step 2", "perceived: nemotron_usa:p0 turn 2"]
    # the table as intent_similarity reads it: through Parquet, answered turns of finished dialogues
    rows = [row for r in results for row in turn_rows(r, "tgt")]
    pd.DataFrame(rows, columns=TURN_COLUMNS).to_parquet(tmp_path / "turns.parquet")
    stored = answered_turns(pd.read_parquet(tmp_path / "turns.parquet"))
    finals = pd.Series({s.seed_id: s.final_intent for s in seeds})
    from_table = table_intent_texts(stored, finals)
    assert set(from_table) == {text for texts in handed.values() for text in texts}
    assert len(from_table) == len(set(from_table)) == 4 * (1 + 3 + 1) + 2  # per dialogue: 3 perceived, opening,
    # final; "wants step 2" and "wants step 3" (turns 2 and 3's gold) are shared by the four dialogues


def test_a_text_gets_the_same_bits_early_late_busy_or_direct():
    text = "wants a plan for night shifts"
    others = [f"a longer other text number {i} with more words in it" for i in range(12)]
    direct = encode_alone(MODEL, text)

    early = EmbeddingQueue()
    early.submit(MODEL, text).result(timeout=60)
    vectors, stats = embed_queued([text, text], MODEL, queue=early)
    assert stats.texts == 1 and stats.ready == 1 and stats.encoded_on_request == 0
    assert np.array_equal(vectors[text], direct)

    busy = EmbeddingQueue()
    for other in others:  # the thread is encoding other texts when this one is asked for
        busy.submit(MODEL, other)
    vectors, stats = embed_queued([text], MODEL, queue=busy)
    assert stats.encoded_on_request == 1 and np.array_equal(vectors[text], direct)

    assert direct.dtype == np.float32 and direct.shape == (384,)
    # the project's one encoder: equal to a batch encoding up to float rounding, unit length
    assert np.allclose(direct, embed([text, *others])[0], atol=1e-5)
    assert abs(float(np.linalg.norm(direct)) - 1.0) < 1e-5


def test_the_embedding_cache_serves_texts_it_stored(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    first, stats = embed_queued(["first text", "second text"], MODEL, cache=cache, queue=EmbeddingQueue())
    assert stats.cached == 0 and stats.encoded_on_request == 2
    reports: list[tuple[int, int]] = []
    again, stats = embed_queued(
        ["second text", "first text", "third"],
        MODEL,
        cache=cache,
        queue=EmbeddingQueue(),
        on_done=lambda *r: reports.append(r),
    )
    assert stats.cached == 2 and stats.encoded_on_request == 1
    assert reports == [(0, 3), (2, 3), (3, 3)]  # the count of distinct texts: none, the two cached, the third encoded
    assert np.array_equal(first["first text"], again["first text"])


def test_texts_the_cache_holds_are_not_handed_over(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    embed_queued(["stored by another partition"], MODEL, cache=cache, queue=EmbeddingQueue())
    queue = EmbeddingQueue()
    assert hand_over(["stored by another partition", "new text"], MODEL, cache=cache, queue=queue) == 1
    _, stats = embed_queued(["stored by another partition", "new text"], MODEL, cache=cache, queue=queue)
    assert (stats.cached, stats.encoded_on_request, stats.ready + stats.under_way) == (1, 0, 1)
    assert hand_over(["x", "y"], MODEL, queue=EmbeddingQueue()) == 2  # no cache: everything is queued


def test_a_model_that_cannot_load_fails_every_text_at_once_until_forgotten():
    queue = EmbeddingQueue()
    with pytest.raises(OSError, match="no-such-model"):
        embed_queued(["a"], "no-such-model", queue=queue)
    later = queue.submit("no-such-model", "b")
    assert later.done() and isinstance(later.exception(), OSError)  # no second load attempt
    queue.forget()
    with pytest.raises(OSError):
        queue.submit("no-such-model", "b").result(timeout=60)


def test_persona_encodes_while_the_queue_works_give_the_same_vectors():
    """A worker process can run persona_pool (torch, batches, main thread) while its queue still encodes texts
    handed over by an earlier step: both use the model's tokenizer, one at a time (resources/text/embeddings.py)."""
    texts = [f"a persona text number {i}, with a few more words to tokenize" for i in range(24)]
    alone = embed(texts)
    queue = EmbeddingQueue()
    futures = [queue.submit(MODEL, f"queued intent text {i} about sleep and work") for i in range(60)]
    together = [embed(texts) for _ in range(3)]
    queued = [f.result(timeout=120) for f in futures]
    assert all(np.array_equal(alone, again) for again in together)
    assert all(
        np.array_equal(v, encode_alone(MODEL, f"queued intent text {i} about sleep and work"))
        for i, v in enumerate(queued)
    )
