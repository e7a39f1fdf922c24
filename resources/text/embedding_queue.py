"""Sentence embeddings of single texts, encoded by a background thread of the process as soon as they are known.

Why one text at a time: an encoder's vector for a text differs in the last bits with the batch it was encoded in
(other lengths pad it differently, other shapes pick other matrix kernels). Encoded alone, a text's vector is a
function of the text: the same bits whether it was handed over while the dialogues ran or asked for later by the
step that needs it. Alone costs about a quarter more CPU per text than batches of 64, time that is spent while the
process waits on the endpoints anyway.

Why a background thread: `dialogue_turns` mostly waits on model endpoints, so the CPU is free while it runs. It
hands each turn's intent texts to `QUEUE.submit` as the turn ends; one thread per process encodes them (torch
works outside the interpreter lock, the dialogue threads keep sending) and `intent_similarity`, later in the same
run, takes the vectors with `embed_queued`. A text nobody handed over is encoded when asked for, by the same
thread in the same way. See docs/throughput.md#intent-embeddings-while-the-dialogues-run.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from resources.text.embedding_cache import EmbeddingCache
from resources.text.onnx_encoder import text_encoder


def encode_alone(model_name: str, text: str) -> np.ndarray:
    """The unit-length float32 vector of `text`, encoded in a batch of its own (ONNX Runtime where the model
    allows it, resources/text/onnx_encoder.py)."""
    return text_encoder(model_name).encode(text)


class EmbeddingQueue:
    """One background thread encoding texts in the order they were submitted; a text submitted twice is encoded
    once. A model that failed to load fails every later text of it at once (not one load per text) until `forget`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], Future[np.ndarray]] = {}
        self._broken: dict[str, BaseException] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._pid = os.getpid()

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pid != os.getpid():  # a forked child starts with no thread
            self._pool, self._pid, self._pending = (
                ThreadPoolExecutor(1, thread_name_prefix="eyt-embed"),
                os.getpid(),
                {},
            )
        return self._pool

    def submit(self, model_name: str, text: str) -> Future[np.ndarray]:
        """The future vector of `text` (started now, or already under way)."""
        key = (model_name, text)
        with self._lock:
            future = self._pending.get(key)
            if future is None:
                if model_name in self._broken:
                    future = Future()
                    future.set_exception(self._broken[model_name])
                else:
                    future = self._executor().submit(self._encode, model_name, text)
                self._pending[key] = future
            return future

    def _encode(self, model_name: str, text: str) -> np.ndarray:
        try:
            return encode_alone(model_name, text)
        except OSError as exc:  # the model cannot be loaded: say so once, not once per text
            with self._lock:
                self._broken[model_name] = exc
            raise

    def take(self, model_name: str, text: str) -> tuple[np.ndarray, str]:
        """The vector of `text` (waiting for it if needed) and how it came: "ready" (encoded before the call),
        "under way" (handed over earlier, not encoded yet) or "new" (nobody had handed it over)."""
        key = (model_name, text)
        with self._lock:
            earlier = self._pending.get(key)
        state = "new" if earlier is None else "ready" if earlier.done() else "under way"
        try:
            return self.submit(model_name, text).result(), state
        finally:
            with self._lock:
                self._pending.pop(key, None)

    def forget(self) -> None:
        """Drop what was handed over and not taken (a step that starts over), and forget failed models."""
        with self._lock:
            for future in self._pending.values():
                future.cancel()
            self._pending.clear()
            self._broken.clear()


QUEUE = EmbeddingQueue()  # one per process: the steps of a run execute in one process


def hand_over(
    texts: Sequence[str], model_name: str, cache: EmbeddingCache | None = None, queue: EmbeddingQueue = QUEUE
) -> int:
    """Queue the texts for encoding, but those the embedding cache holds already (another partition's); the
    number queued."""
    found = cache.get_many(model_name, list(texts)) if cache is not None and texts else {}
    missing = [text for i, text in enumerate(texts) if i not in found]
    for text in missing:
        queue.submit(model_name, text)
    return len(missing)


@dataclass(frozen=True)
class QueueStats:
    """What one `embed_queued` call did with its distinct texts: read from the embedding cache, found encoded,
    found handed over but not encoded yet, encoded on request; and the seconds it took."""

    texts: int
    cached: int
    ready: int
    under_way: int
    encoded_on_request: int
    wait_s: float

    def __str__(self) -> str:
        return (
            f"{self.texts} distinct texts: {self.cached} from the embedding cache, {self.ready} encoded while the "
            f"dialogues ran, {self.under_way} handed over and encoded now, {self.encoded_on_request} encoded on "
            f"request; {self.wait_s:.1f} s"
        )


def embed_queued(
    texts: Sequence[str],
    model_name: str,
    cache: EmbeddingCache | None = None,
    queue: EmbeddingQueue = QUEUE,
    on_done: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, np.ndarray], QueueStats]:
    """The vector of each distinct text, each encoded alone (or read from `cache`, which stores the new ones).
    `on_done(done, total)` counts the distinct texts: 0 before the first, those the cache held, then each taken."""
    started = time.perf_counter()
    distinct = list(dict.fromkeys(texts))
    report = on_done or (lambda done, total: None)
    report(0, len(distinct))
    found = cache.get_many(model_name, distinct) if cache is not None and distinct else {}
    vectors = {distinct[i]: vector for i, vector in found.items()}
    if found:
        report(len(found), len(distinct))
    states: Counter[str] = Counter()
    new: list[str] = []
    for text in distinct:
        if text not in vectors:
            vectors[text], state = queue.take(model_name, text)
            states[state] += 1
            new.append(text)
            report(len(vectors), len(distinct))
    if cache is not None and new:
        cache.put_many(model_name, new, np.stack([vectors[t] for t in new]))
    stats = QueueStats(
        texts=len(distinct),
        cached=len(found),
        ready=states["ready"],
        under_way=states["under way"],
        encoded_on_request=states["new"],
        wait_s=time.perf_counter() - started,
    )
    return vectors, stats


@dataclass(frozen=True)
class EarlyEmbeddings:
    """One step's view of the process's background encoder for one model: texts are handed over as they appear
    (those the embedding cache holds are skipped), their vectors taken later, and what no one will ask for
    dropped."""

    model_name: str
    cache: EmbeddingCache | None = None
    queue: EmbeddingQueue = QUEUE

    def hand_over(self, texts: Sequence[str]) -> int:
        return hand_over(texts, self.model_name, self.cache, self.queue)

    def embed(
        self, texts: Sequence[str], on_done: Callable[[int, int], None] | None = None
    ) -> tuple[dict[str, np.ndarray], QueueStats]:
        return embed_queued(texts, self.model_name, self.cache, self.queue, on_done)

    def forget(self) -> None:
        self.queue.forget()
