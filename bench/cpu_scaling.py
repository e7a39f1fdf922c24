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
the CPU per call, the Dagster runs and events, and the sentence encodes the metrics need (intent texts and the
simulator audit's user turns, counted in the stored tables). It then fits CPU = fixed + per call x calls over the
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


def encodes(data_dir: Path) -> dict[str, int]:
    """The texts the run's metrics encoded: intent texts (intent_similarity) and the audit's user turns."""
    import duckdb

    with duckdb.connect(str(data_dir / "eyt.duckdb"), read_only=True) as con:
        turns = con.execute(
            "SELECT count(*) FROM dialogue.simulator_audit WHERE leak_cosine IS NOT NULL AND NOT isnan(leak_cosine)"
        ).fetchone()
        intents = con.execute("SELECT count(*) FROM dialogue.intent_similarity").fetchone()
    return {"audit_turns": int(turns[0]) if turns else 0, "intent_rows": int(intents[0]) if intents else 0}


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
                **encodes(work / f"targets_{n}"),
                "cpu_ms_per_call": figures.cpu_s / max(figures.calls, 1) * 1e3,
            }
            sizes.append(size)
            print(
                f"  {figures.calls} calls, {figures.cpu_s:.1f} s CPU, {size['cpu_ms_per_call']:.1f} ms a call, "
                f"wall {figures.wall_s:.1f} s, {figures.dagster_runs} Dagster runs, {figures.dagster_events} events, "
                f"{size['intent_rows']} intent rows, {size['audit_turns']} audited turns",
                flush=True,
            )
    model = fit(sizes)
    print("\n| targets | cells | calls | CPU | ms a call | Dagster events | wall |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        print(
            f"| {s['targets']} | {s['cells']} | {s['calls']:,} | {s['cpu_s']:.1f} s | {s['cpu_ms_per_call']:.1f} "
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
