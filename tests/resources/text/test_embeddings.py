"""Sentence embeddings: each distinct text encoded once, the persistent embedding cache, and that neither
changes what the persona deduplication and intent_similarity store (docs/throughput.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench.sampling import deduplicate
from eyt_dagster.eyt_bench.settings import PoolSource
from eyt_dagster.ops.launch import worker_torch_threads
from eyt_dagster.slate import default_slate_path
from resources.datasets.persona_sources import load_pool_records
from resources.text.embedding_cache import EmbeddingCache, cache_enabled
from resources.text.embeddings import OFFLINE_PACKAGE_MODEL, distinct_texts, embed, embed_with_stats

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.unit
def test_distinct_texts_scatter_on_hand_cases() -> None:
    distinct, inverse = distinct_texts(["b", "a", "b", "c", "a", "b"])
    assert distinct == ["b", "a", "c"]
    assert inverse.tolist() == [0, 1, 0, 2, 1, 0]
    distinct, inverse = distinct_texts(["only"])
    assert distinct == ["only"] and inverse.tolist() == [0]
    distinct, inverse = distinct_texts([])
    assert distinct == [] and inverse.shape == (0,)
    # scattering rows of the distinct texts back gives one row per input, in input order
    rows = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    _, inverse = distinct_texts(["x", "y", "x", "z"])
    assert rows[inverse].tolist() == [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]


@pytest.mark.unit
def test_each_distinct_text_is_encoded_once_and_copied_back() -> None:
    texts = ["I need a cheaper flight.", "Tell me about penguins.", "I need a cheaper flight."]
    vectors, stats = embed_with_stats(texts)
    assert (stats.texts, stats.distinct, stats.cached, stats.encoded) == (3, 2, 0, 2)
    assert stats.backend == "onnxruntime" and "onnxruntime, one text at a time" in str(stats)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.array_equal(vectors[0], vectors[2])
    # the same two texts encoded without repeats: the very same bits
    assert np.array_equal(vectors[:2], embed(texts[:2]))
    empty, stats = embed_with_stats([])
    assert empty.shape == (0, 384) and (stats.texts, stats.encoded) == (0, 0)


@pytest.mark.unit
def test_cache_round_trip_and_reuse(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite")
    texts = ["a calm reply", "an angry reply", "a calm reply", "a third one"]
    first, stats = embed_with_stats(texts, cache=cache)
    assert (stats.distinct, stats.cached, stats.encoded) == (3, 0, 3)
    again, stats = embed_with_stats(texts, cache=cache)
    assert (stats.cached, stats.encoded) == (3, 0)
    assert np.array_equal(first, again)  # read back bit for bit
    # another handle on the same file (as another worker process has) sees the vectors; a new text is encoded
    other = EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite")
    mixed, stats = embed_with_stats(["a third one", "something new"], cache=other)
    assert (stats.cached, stats.encoded) == (1, 1)
    assert np.array_equal(mixed[0], first[3])
    # keyed by model name: another model name finds nothing
    assert other.get_many("another-model", texts) == {}
    assert set(other.get_many(OFFLINE_PACKAGE_MODEL, ["an angry reply", "never stored"])) == {0}


@pytest.mark.unit
def test_all_cached_needs_no_encoder(tmp_path: Path) -> None:
    """Every vector in the cache: the encoder is not loaded (a name that cannot load would raise)."""
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many("no-such-model", ["x", "y"], np.array([[0.6, 0.8], [1.0, 0.0]], dtype=np.float32))
    vectors, stats = embed_with_stats(["y", "x", "y"], "no-such-model", cache=cache)
    assert vectors.tolist() == [[1.0, 0.0], [0.6000000238418579, 0.800000011920929], [1.0, 0.0]]
    assert (stats.cached, stats.encoded) == (2, 0)
    with pytest.raises(OSError, match="no-such-model"):
        embed_with_stats(["z"], "no-such-model", cache=cache)


@pytest.mark.unit
def test_cache_keeps_the_first_vector_stored(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many("m", ["t"], np.array([[1.0, 2.0]], dtype=np.float32))
    cache.put_many("m", ["t", "u"], np.array([[9.0, 9.0], [3.0, 4.0]], dtype=np.float32))
    got = cache.get_many("m", ["u", "t"])
    assert got[0].tolist() == [3.0, 4.0] and got[1].tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="2 texts but 1 vectors"):
        cache.put_many("m", ["a", "b"], np.zeros((1, 2), dtype=np.float32))


@pytest.mark.cli
def test_concurrent_processes_write_one_cache(tmp_path: Path) -> None:
    """Two processes opening a new cache file together and storing overlapping texts in many short
    transactions: no error, every key once. Repeated on fresh files, as the race is at the first open."""
    script = textwrap.dedent(
        """
        import sys, numpy as np
        from resources.text.embedding_cache import EmbeddingCache
        cache = EmbeddingCache(sys.argv[1])
        start = int(sys.argv[2])
        for i in range(start, start + 300, 3):
            texts = [f"text {j}" for j in range(i, i + 3)]
            cache.put_many("m", texts, np.full((3, 4), float(i), dtype=np.float32))
        """
    )
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    for round_ in range(8):
        path = tmp_path / f"shared-{round_}.sqlite"
        procs = [
            subprocess.Popen([sys.executable, "-c", script, str(path), str(s)], env=env, stderr=subprocess.PIPE)
            for s in (0, 150)
        ]
        results = [(p.wait(timeout=120), p.stderr.read().decode() if p.stderr else "") for p in procs]
        assert [code for code, _ in results] == [0, 0], [err for _, err in results]
        found = EmbeddingCache(path).get_many("m", [f"text {j}" for j in range(450)])
        assert sorted(found) == list(range(450))


@pytest.mark.unit
def test_cache_switch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from resources.models.model_access import EmbeddingAccess

    monkeypatch.delenv("EYT_EMBEDDING_CACHE", raising=False)  # off by default: fresh runs stay bit-identical
    assert not cache_enabled()
    assert EmbeddingAccess(data_dir=str(tmp_path)).embedding_cache is None
    monkeypatch.setenv("EYT_EMBEDDING_CACHE", "on")
    assert cache_enabled()
    embeddings = EmbeddingAccess(data_dir=str(tmp_path))
    assert (
        embeddings.embedding_cache is not None
        and embeddings.embedding_cache.path == tmp_path / "cache" / "embeddings.sqlite"
    )
    monkeypatch.setenv("EYT_EMBEDDING_CACHE", "off")
    assert not cache_enabled()


@pytest.mark.unit
def test_worker_torch_threads_divides_the_cores() -> None:
    assert worker_torch_threads(2, 2) == 1
    assert worker_torch_threads(2, 8) == 4
    assert worker_torch_threads(3, 8) == 2
    assert worker_torch_threads(4, 2) == 1  # never below one
    assert worker_torch_threads(1, None) == 1


@pytest.mark.unit
@pytest.mark.parametrize("pool", ["nemotron_usa", "personamem_v2"])
def test_persona_dedup_is_the_same_with_and_without_cache(pool: str, tmp_path: Path) -> None:
    records = load_pool_records(pool, PoolSource())[0]
    texts = [r.persona_text for r in records]
    # the encoder as it was called before: every text in one encode, no dedup, no cache
    from resources.text.sentence_model import load_sentence_encoder

    plain = load_sentence_encoder(OFFLINE_PACKAGE_MODEL).encode(
        texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    reference = deduplicate(records, plain, 0.85)
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    # warm the cache from other batches (half the texts, reversed) so cached vectors come from other contexts
    embed(texts[::-2], cache=cache)
    for vectors in (embed(texts), embed(texts, cache=cache), embed(texts, cache=cache)):
        np.testing.assert_allclose(vectors, plain, atol=1e-6, rtol=0)
        result = deduplicate(records, vectors, 0.85)
        assert result.duplicate_of == reference.duplicate_of
        assert [r.persona_id for r in result.kept] == [r.persona_id for r in reference.kept]


def _intent_similarity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: str) -> pd.DataFrame:
    from dagster import MultiPartitionKey, build_asset_context

    from assets.eyt_bench.intent_similarity import intent_similarity
    from resources.models.model_access import EmbeddingAccess, SlateAccess

    monkeypatch.setenv("EYT_EMBEDDING_CACHE", cache)
    turns = pd.DataFrame(
        {
            "target": "reflective-baseline",
            "pool": "nemotron_usa",
            "seed_id": ["s1", "s1", "s1", "s2", "s2"],
            "turn": [1, 2, 3, 1, 2],
            "gold_intent_description": ["book a flight", "a cheaper flight", "a cheaper flight", "vent", "vent"],
            "pred_intent_description": ["travel", "a cheaper flight", "refund", "vent", "be heard"],
            "error": None,
        }
    )
    seeds = pd.DataFrame({"seed_id": ["s1", "s2"], "final_intent": ["a cheaper flight", "be heard"]})
    slate, embeddings = SlateAccess(slate_path=str(default_slate_path())), EmbeddingAccess(data_dir=str(tmp_path))
    cell = MultiPartitionKey({"target": "reflective-baseline", "pool": "nemotron_usa"})  # the pool picks the encoder
    context = build_asset_context(partition_key=cell)
    out = intent_similarity(context=context, slate=slate, embeddings=embeddings, dialogue_turns=turns, chat_seeds=seeds)
    return out.value.drop(columns=["created_at"])


@pytest.mark.materialisation
def test_intent_similarity_is_the_same_with_and_without_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _intent_similarity(tmp_path, monkeypatch, "off")
    assert not (tmp_path / "cache" / "embeddings.sqlite").exists()
    # a cache warmed by another partition's texts in another batch
    embed(["be heard", "refund", "unrelated text"], cache=EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite"))
    cold = _intent_similarity(tmp_path, monkeypatch, "on")
    warm = _intent_similarity(tmp_path, monkeypatch, "on")
    pd.testing.assert_frame_equal(cold, warm)  # a rerun reads the vectors it stored: the same bits
    pd.testing.assert_frame_equal(plain, cold, check_exact=False, atol=1e-6, rtol=0)
    assert plain.loc[plain["turn"] == 2, "cos_gold_pred"].tolist()[0] == pytest.approx(1.0, abs=1e-6)
    assert (plain["cos_gold_pred"].round(4) == cold["cos_gold_pred"].round(4)).all()


@pytest.mark.unit
def test_a_text_gets_the_same_bits_alone_or_among_others() -> None:
    """Each text of a list is encoded alone: its row is the single-text encoder's vector, bit for bit, whatever
    else the list holds and in whatever order (so the persona step, intent similarity and the audit agree)."""
    from resources.text.onnx_encoder import text_encoder

    texts = ["A nurse who moved to Denver last spring.", "短い", "", "x " * 400, "I need a cheaper flight."]
    alone = np.stack([text_encoder(OFFLINE_PACKAGE_MODEL).encode(t) for t in texts])
    assert np.array_equal(embed(texts), alone)
    assert np.array_equal(embed(texts[::-1]), alone[::-1])
    assert np.array_equal(embed(texts[1:2]), alone[1:2])
