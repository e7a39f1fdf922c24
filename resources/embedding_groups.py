"""Sentence embeddings of groups of texts, each group encoded as one batch by a background thread of the process.

Why groups: an encoder's vector for a text differs in the last bits with the batch it was encoded in (other
lengths pad it differently, other shapes pick other matrix kernels). Encoding each group (one dialogue's intent
texts) as a batch of its own makes its vectors a function of the group alone: the same bits whether the group
was handed over early, while the dialogues were still running, or asked for later by the step that needs it.

Why a background thread: `dialogue_turns` mostly waits on model endpoints, so the CPU is free while it runs.
It hands each finished dialogue's group to `ENCODER.submit`; one thread per process encodes the groups (torch
works outside the interpreter lock, the dialogue threads keep sending) and `intent_similarity`, later in the
same run, takes the vectors with `embed_groups`. A group nobody handed over is encoded when asked for, by the
same thread in the same way. See docs/throughput.md#intent-embeddings-while-the-dialogues-run.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from resources.embedding_cache import EmbeddingCache
from resources.embeddings import load_sentence_encoder

Group = tuple[str, ...]


def encode_group(model_name: str, group: Group) -> np.ndarray:
    """Unit-length float32 vectors of `group`'s texts, encoded as one batch."""
    encoded = load_sentence_encoder(model_name).encode(
        list(group),
        batch_size=max(1, len(group)),
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(encoded, dtype=np.float32)


class GroupEncoder:
    """One background thread encoding groups in the order they were submitted; a group submitted twice is encoded
    once. A model that failed to load fails every later group of it at once (not once per group) until `forget`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, Group], Future] = {}
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

    def submit(self, model_name: str, group: Group) -> Future:
        """The future vectors of `group` (started now, or already under way)."""
        key = (model_name, group)
        with self._lock:
            future = self._pending.get(key)
            if future is None:
                if model_name in self._broken:
                    future = Future()
                    future.set_exception(self._broken[model_name])
                else:
                    future = self._executor().submit(self._encode, model_name, group)
                self._pending[key] = future
            return future

    def _encode(self, model_name: str, group: Group) -> np.ndarray:
        try:
            return encode_group(model_name, group)
        except OSError as exc:  # the model cannot be loaded: say so once, not once per group
            with self._lock:
                self._broken[model_name] = exc
            raise

    def take(self, model_name: str, group: Group) -> tuple[np.ndarray, str]:
        """The vectors of `group` (waiting for them if needed) and how they came: "ready" (encoded before the call),
        "under way" (handed over earlier, still being encoded) or "new" (nobody had handed it over)."""
        key = (model_name, group)
        with self._lock:
            earlier = self._pending.get(key)
        state = "new" if earlier is None else "ready" if earlier.done() else "under way"
        try:
            return self.submit(model_name, group).result(), state
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


ENCODER = GroupEncoder()  # one per process: the steps of a run execute in one process


@dataclass(frozen=True)
class GroupStats:
    """What one `embed_groups` call did: groups and texts asked for; groups read from the embedding cache, found
    encoded, found still being encoded (handed over earlier), and encoded on request; the seconds it took."""

    groups: int
    texts: int
    cached: int
    ready: int
    under_way: int
    encoded_on_request: int
    wait_s: float

    def __str__(self) -> str:
        return (
            f"{self.groups} groups ({self.texts} texts): {self.cached} from the embedding cache, {self.ready} encoded "
            f"while the dialogues ran, {self.under_way} still being encoded, {self.encoded_on_request} encoded on "
            f"request; {self.wait_s:.1f} s"
        )


def embed_groups(
    groups: Sequence[Group], model_name: str, cache: EmbeddingCache | None = None, encoder: GroupEncoder = ENCODER
) -> tuple[list[np.ndarray], GroupStats]:
    """The vectors of each group (one row per text, in the group's order) and what it took. With a `cache`, a
    group whose texts are all stored is read from it, and a newly encoded group is stored."""
    started = time.perf_counter()
    out: list[np.ndarray] = []
    states: Counter[str] = Counter()
    for group in groups:
        found = cache.get_many(model_name, list(group)) if cache is not None and group else {}
        if group and len(found) == len(group):
            out.append(np.stack([found[i] for i in range(len(group))]))
            states["cached"] += 1
            continue
        vectors, state = encoder.take(model_name, group)
        states[state] += 1
        if cache is not None:
            cache.put_many(model_name, list(group), vectors)
        out.append(vectors)
    stats = GroupStats(
        groups=len(groups),
        texts=sum(len(g) for g in groups),
        cached=states["cached"],
        ready=states["ready"],
        under_way=states["under way"],
        encoded_on_request=states["new"],
        wait_s=time.perf_counter() - started,
    )
    return out, stats
