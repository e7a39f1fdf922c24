"""Manual check: the whole graph against a real OpenAI-compatible server running a real (small) model.

Not part of the test suite: it needs a llama.cpp `llama-server` binary and a GGUF model, takes minutes, and
its figures depend on the model. It answers one question a new user asks first: does a run against a real
server (one that enforces the JSON schema it is sent, answers slowly and sometimes badly) complete, and is
every failure accounted for?

What it does:
1. starts `llama-server` on 127.0.0.1 with the given GGUF model;
2. writes a slate in a fresh data directory where the simulator, one target (both benchmarks; SpeechEQ as
   oracle text, so a text-only model can answer) and the judge are that server;
3. runs `eyt run` for one pool and one SpeechEQ subscale (the SpeechEQ items come from the embedded template
   generator and espeak-ng);
4. prints what the call ledger and the warehouse say: calls, failures by kind, error rows per table.

With `--packaged-slate` the slate is instead a copy of the packaged one (eyt_dagster/slates/default.yaml) with
every model role on the server: the simulator, two EYT-Bench targets (a thinking pair, one also a SpeechEQ oracle
text target), a cascaded and an end-to-end (audio) SpeechEQ target, both judges, the replacement judge and the
SpeechEQ text generator (also validator and tone judge); both pools, run side by side (`--runs-parallel`, default
2).
The model hears no audio: the audio target's requests are refused by the server, and must show up as counted
failures, not as a crash.

Usage (see docs/remote-models.md for building llama-server from PyPI sources):

    .venv/bin/python bench/real_server_check.py --server-bin PATH/llama-server --gguf PATH/model.gguf

The model is far too small to be a judge: its numbers mean nothing; the check is about the plumbing.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import duckdb
import yaml

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(base: str, proc: subprocess.Popen, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited with status {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"llama-server did not answer {base}/health within {timeout_s:.0f} s")


def model_entry(model_id: str, family: str, base_url: str, args: argparse.Namespace) -> dict:
    return {
        "id": model_id,
        "provider": "openai",
        "model": "local",
        "family": family,
        "base_url": base_url,
        "profile": args.profile,
        "temperature": 0.0,
        "max_tokens": args.max_tokens,
        "timeout_s": args.timeout_s,
        "max_concurrency": 4,
    }


def write_slate(path: Path, base_url: str, args: argparse.Namespace) -> None:
    target = model_entry("smol-target", "smollm2", base_url, args)
    target |= {"benchmarks": ["eyt_bench", "speech_eq"], "speech_input": "oracle_text"}
    slate = {
        "name": "real-server-check",
        "seed": 20260521,
        "pool_size": 20,
        "dialogues_per_pool": args.dialogues,
        "t_max": args.t_max,
        # the same small model plays every role: say so rather than hide it behind different family names
        "allow_same_family": True,
        "pools": {args.pool: {"source": "fixture"}},
        "simulator": model_entry("smol-simulator", "smollm2", base_url, args),
        "targets": [target],
        "judges": [model_entry("smol-judge", "smollm2", base_url, args)],
        "speech": {"evaluation": {"conditions": ["default"], "inference": ["sequential", "direct"]}},
    }
    path.write_text(yaml.safe_dump(slate, sort_keys=False))


def write_packaged_slate(path: Path, base_url: str, args: argparse.Namespace) -> None:
    """The packaged slate with every model role on the server, and small sizes so it ends in minutes."""
    slate = yaml.safe_load((ROOT / "eyt_dagster" / "slates" / "default.yaml").read_text())

    def remote(model_id: str, family: str = "smollm2", **extra) -> dict:
        return model_entry(model_id, family, base_url, args) | extra

    slate.update(
        name="real-server-packaged",
        pool_size=20,
        dialogues_per_pool=args.dialogues,
        t_max=args.t_max,
        bootstrap_resamples=100,
        cross_judge_dialogues=2,
        allow_same_family=True,  # one small model plays every role: said, not hidden behind family names
        simulator=remote("smol-simulator"),
        targets=[
            remote("smol-target", benchmarks=["eyt_bench", "speech_eq"], speech_input="oracle_text"),
            remote("smol-target-think", thinking=True),
            remote("smol-cascade", benchmarks=["speech_eq"], speech_input="cascaded"),
            remote("smol-audio", benchmarks=["speech_eq"], speech_input="audio"),
        ],
        reasoning_pairs=[{"name": "smol", "think": "smol-target-think", "non_think": "smol-target"}],
        judges=[remote("smol-judge"), remote("smol-judge-strict", "smollm2-b")],
        replacement_judge=remote("smol-judge-replacement", "smollm2-c"),
    )
    slate["speech"] = {**slate.get("speech", {}), "models": [remote("smol-writer")], "generator": "smol-writer"}
    path.write_text(yaml.safe_dump(slate, sort_keys=False))


def ledger_summary(cache_file: Path) -> None:
    if not cache_file.exists():
        print("no call ledger was written")
        return
    con = sqlite3.connect(cache_file)
    rows = con.execute("SELECT role, ok, retries, failure, error, cached FROM ledger").fetchall()
    con.close()
    by_role = Counter((r[0], "ok" if r[1] else "failed") for r in rows)
    kinds = Counter((role, failure or "unknown") for role, ok, _retries, failure, _error, _cached in rows if not ok)
    first: dict[tuple[str, str], str] = {}
    for role, ok, _retries, failure, error, _cached in rows:
        if not ok:
            first.setdefault((role, failure or "unknown"), (error or "")[:140])
    cached = sum(1 for r in rows if r[5])
    print(f"\nledger: {len(rows)} calls ({cached} from the call cache), {sum(r[2] for r in rows)} SDK retries")
    for (role, state), n in sorted(by_role.items()):
        print(f"  {role:<22} {state:<7} {n}")
    if kinds:
        print("failed calls by kind (the ledger's `failure` column), with the first error of each:")
        for (role, kind), n in sorted(kinds.items()):
            print(f"  {role:<22} {kind:<20} {n:>4}  {first[(role, kind)]}")


def warehouse_summary(db_file: Path) -> None:
    if not db_file.exists():
        print("no warehouse was written")
        return
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema IN ('dialogue', 'speech') ORDER BY 1, 2"  # views over the Parquet files
        ).fetchall()
        print("\nwarehouse rows (error rows where the table has an `error` column):")
        for schema, table in tables:
            cols = {c[0] for c in con.execute(f'DESCRIBE "{schema}"."{table}"').fetchall()}
            total = con.execute(f'SELECT count(*) FROM "{schema}"."{table}"').fetchone()[0]
            errors = (
                con.execute(f'SELECT count(*) FROM "{schema}"."{table}" WHERE error IS NOT NULL').fetchone()[0]
                if "error" in cols
                else None
            )
            print(f"  {schema}.{table:<28} {total:>6} rows" + (f", {errors} error rows" if errors is not None else ""))
            if errors and "error_kind" in cols:
                for role, kind, n in con.execute(
                    f'SELECT error_role, error_kind, count(*) FROM "{schema}"."{table}" WHERE error IS NOT NULL '
                    "GROUP BY ALL ORDER BY ALL"
                ).fetchall():
                    print(f"      {role or '?'}: {n} {kind or '?'}")
        for name in ("dialogue.leaderboard", "speech.seq_leaderboard"):
            try:
                print(f"\n{name}:\n{con.execute(f'FROM {name}').df().to_string(index=False, max_colwidth=24)}")
            except duckdb.Error:
                print(f"\n{name}: not materialised")
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server-bin", required=True, help="path of the llama-server binary")
    parser.add_argument("--gguf", required=True, help="path of a GGUF chat model")
    parser.add_argument("--data-dir", help="where to put the warehouse, cache and instance (default: a temp dir)")
    parser.add_argument("--pool", default="nemotron_usa", help="the pool (not with --packaged-slate: both pools)")
    parser.add_argument("--subscale", default="interpersonal_empathy")
    parser.add_argument(
        "--packaged-slate",
        action="store_true",
        help="a copy of the packaged slate with every model role on the server, both pools (see the docstring)",
    )
    parser.add_argument("--runs-parallel", type=int, default=2, help="eyt run --parallel (2)")
    parser.add_argument("--dialogues", type=int, default=3)
    parser.add_argument("--t-max", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    parser.add_argument("--ctx-size", type=int, default=16384, help="llama-server context, shared by its slots")
    parser.add_argument("--parallel", type=int, default=4, help="llama-server slots")
    parser.add_argument(
        "--threads",
        type=int,
        help="llama-server's generation threads (-t; default: the server's own choice, every core): fewer leave "
        "cores to the project's workers on a small machine",
    )
    parser.add_argument(
        "--profile",
        default="llama.cpp",
        help="the slate's profile for every model on the server (default llama.cpp; auto to try the detection)",
    )
    parser.add_argument(
        "--port",
        type=int,
        help="llama-server port (default: a free one); the base URL is part "
        "of every call's cache key, so a rerun over the same data dir needs the same port",
    )
    args = parser.parse_args(argv)

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="eyt-real-server-")).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    port = args.port or free_port()
    base = f"http://127.0.0.1:{port}"
    server_log = data_dir / "llama-server.log"
    command = [
        args.server_bin,
        "-m",
        args.gguf,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(args.ctx_size),
        "--parallel",
        str(args.parallel),
        *(["--threads", str(args.threads)] if args.threads else []),
    ]
    print("starting:", " ".join(command))
    with server_log.open("w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(base, server)
        slate_file = data_dir / "slate.yaml"
        (write_packaged_slate if args.packaged_slate else write_slate)(slate_file, f"{base}/v1", args)
        env = dict(os.environ, EYT_SLATE=str(slate_file), EYT_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1")
        eyt = [sys.executable, "-m", "eyt_dagster.ops.cli", "run", "--subscale", args.subscale]
        eyt += ["--parallel", str(args.runs_parallel)] + ([] if args.packaged_slate else ["--pool", args.pool])
        print("running:", " ".join(eyt), f"(EYT_DATA_DIR={data_dir})")
        started = time.monotonic()
        run = subprocess.run(eyt, env=env, cwd=ROOT)
        print(f"\neyt run exit status {run.returncode} after {time.monotonic() - started:.0f} s")
        ledger_summary(data_dir / "cache" / "model_calls.sqlite")
        warehouse_summary(data_dir / "eyt.duckdb")
        print(json.dumps({"data_dir": str(data_dir), "server_log": str(server_log)}))
        return run.returncode
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    raise SystemExit(main())
