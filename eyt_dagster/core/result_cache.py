"""Results of pure computations kept under a key made of exactly their inputs, so a rerun recomputes only what
changed (docs/throughput.md, "The reports' result cache").

A report table over every target x pool cell is mostly per-cell work (one cell's intervals) or per-pair work (two
cells' paired differences) and a little work over everything (a Holm adjustment, a ranking). The per-cell and
per-pair parts are stored in a `ResultStore` under a `content_key` of what they were computed from: the cell's
rows, the settings (seed, resamples), the ChatSEED columns and the computation's version. A key that is found is
not recomputed; the stored value is the float64 array the computation returned, bit for bit, so a table built from
stored parts equals one computed from scratch. The domain asks a store for what it has and computes the rest
(`cached_arrays`); where the store lives (a file under the data directory) is a resource's business.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


class ResultStore(Protocol):
    """Stored results by kind (one computation) and key (content_key of its inputs)."""

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, bytes]: ...

    def put_many(self, kind: str, items: Mapping[str, bytes]) -> None: ...  # a key already stored keeps its value


@dataclass
class CacheCounters:
    """What a store answered: per kind, keys found and keys computed (missing) since it was opened."""

    found: dict[str, int] = field(default_factory=dict)
    computed: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str, found: int, computed: int) -> None:
        self.found[kind] = self.found.get(kind, 0) + found
        self.computed[kind] = self.computed.get(kind, 0) + computed


class MemoryStore:
    """A store in a dict: a computation from scratch (a fresh one holds nothing), or a test's."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], bytes] = {}
        self.counters = CacheCounters()

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, bytes]:
        return {k: self.values[(kind, k)] for k in keys if (kind, k) in self.values}

    def put_many(self, kind: str, items: Mapping[str, bytes]) -> None:
        for k, v in items.items():
            self.values.setdefault((kind, k), v)


def _part(value: object) -> bytes:
    """One key part as bytes that cannot run into the next: type tag, length, content."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        body = f"{data.dtype.str}{data.shape}".encode() + data.tobytes()
        tag = b"a"
    elif isinstance(value, bytes):
        body, tag = value, b"b"
    elif isinstance(value, str):
        body, tag = value.encode("utf-8"), b"s"
    elif isinstance(value, bool | int | float) or value is None:
        body, tag = repr(value).encode(), b"n"
    elif isinstance(value, tuple | list):
        body, tag = b"".join(_part(v) for v in value), b"t"
    else:
        raise TypeError(f"a cache key part must be an array, bytes, str, number or tuple, not {type(value).__name__}")
    return tag + struct.pack("<Q", len(body)) + body


def content_key(*parts: object) -> str:
    """sha256 (hex) of the parts in order: the key of a result computed from exactly these inputs."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(_part(part))
    return digest.hexdigest()


def encode(values: np.ndarray) -> bytes:
    """A float64 array as stored (its shape is the computation's to know)."""
    return np.ascontiguousarray(values, dtype=np.float64).tobytes()


def decode(blob: bytes, shape: tuple[int, ...] | None) -> np.ndarray:
    """A stored float64 array in `shape` (None: one dimension of any length)."""
    values = np.frombuffer(blob, dtype=np.float64)
    if shape is None:
        return values
    if values.size != int(np.prod(shape)):
        raise ValueError(f"a stored result has {values.size} values, not {shape}: clear the report cache")
    return values.reshape(shape)


def cached_arrays(
    store: ResultStore,
    kind: str,
    keys: Sequence[str],
    shape: tuple[int, ...] | None,
    compute: Callable[[list[int]], list[np.ndarray]],
    counters: CacheCounters | None = None,
) -> list[np.ndarray]:
    """The result of every key, in order: the stored ones read, the others computed by `compute` (given their
    positions in `keys`, returning one array of `shape` each, in that order; `shape` None: one dimension of any
    length) and stored."""
    unique = list(dict.fromkeys(keys))
    found = {k: decode(v, shape) for k, v in store.get_many(kind, unique).items()}
    missing = [k for k in unique if k not in found]
    first = {k: i for i, k in reversed(list(enumerate(keys)))}
    if missing:
        made = compute([first[k] for k in missing])
        if len(made) != len(missing):
            raise ValueError(f"{kind}: {len(made)} results for {len(missing)} keys")
        fresh = {k: np.asarray(v, dtype=np.float64).reshape(shape or -1) for k, v in zip(missing, made)}
        store.put_many(kind, {k: encode(v) for k, v in fresh.items()})
        found.update(fresh)
    tally = counters if counters is not None else getattr(store, "counters", None)
    if isinstance(tally, CacheCounters):
        tally.count(kind, len(unique) - len(missing), len(missing))
    return [found[k] for k in keys]
