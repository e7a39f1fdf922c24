"""How long the whole `eyt_reports` run takes at 10, 30 and 100 targets, and after one more target. Not a test: run
it by hand (docs/throughput.md, "The reports at many targets").

Per size N it makes a temporary data directory with a slate of N EYT-Bench targets (embedded baselines with
distinct ids, `target-000` ...; the default slate's judges, replacement judge and human annotations example), their
dynamic partitions registered in a real Dagster instance there as `eyt` registers them, and the EYT-Bench tables
of every target x pool cell synthesised by bench/explorer_pages.py's generator (65 ChatSEEDs per pool, 6 turns,
the slate's two judges); dialogue_scores is computed from them by the real scoring function
(`score_dialogues`, what the dialogue_scores asset runs). Then it executes the real `eyt_reports` job against the
instance in a fresh process (execute_job, the in-process executor, as `eyt run` does), reads each step's time from
the instance's event log (STEP_START to STEP_SUCCESS), then adds target N+1 to the slate and the instance, writes
its partitions and runs the job again.

    python bench/reports_scale.py                     # 10, 30 and 100 targets
    python bench/reports_scale.py --targets 100 --keep /tmp/reports100
    python bench/reports_scale.py --targets 100 --snapshot /tmp/snap100    # then, after a change:
    python bench/reports_scale.py --from-snapshot /tmp/snap100 --repeat 3  # only the +1 target run, 3 times

Printed per size: the run (first step start to last step end in the event log), the job process's wall time
(imports and loading the code location included), the job's CPU seconds (execute_job, every thread; a shared
machine's load moves it less than the wall times), the slowest steps, the run after one more target, and two
floors: reading every input table the job reads once (each table once, all columns, as the IO manager reads it)
and the bootstrap work no implementation avoids (every cell's per-dialogue values resampled once per interval
metric, and the pairwise comparisons' floor from bench/pairwise_scale.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from explorer_pages import DIALOGUES, TURNS, dialogue_frames, seed_frame, target_name  # noqa: E402

from eyt_dagster.eyt_bench.taxonomy import POOLS  # noqa: E402
from eyt_dagster.slate import default_slate_path  # noqa: E402

SIZES = (10, 30, 100)
JUDGES = ("rubric-judge", "rubric-judge-strict")  # the default slate's judges
JOB = "eyt_reports"
INPUT_TABLES = (
    "dialogue_scores",
    "dialogue_turns",
    "judge_verdicts",
    "final_intent_verdicts",
    "chat_seeds",
    "simulator_audit",
)


def slate_for(n_targets: int) -> dict:
    """The default slate with `n_targets` embedded EYT-Bench targets (and its SpeechEQ choosers, which the job
    does not read); target-001 is target-000 with thinking on, the one reasoning pair."""
    slate = yaml.safe_load(default_slate_path().read_text())
    speech = [t for t in slate["targets"] if "speech_eq" in (t.get("benchmarks") or [])]
    targets = [
        {
            "id": target_name(k),
            "provider": "embedded",
            "model": "reflective" if k % 3 else "terse",
            "family": f"eyt-baseline-family-{k % 4}",
            **({"thinking": True} if k == 1 else {}),
        }
        for k in range(n_targets)
    ]
    targets[1]["model"] = targets[0]["model"]
    targets[1]["family"] = targets[0]["family"]
    slate.update(
        name=f"reports-scale-{n_targets}",
        targets=[*targets, *speech],
        reasoning_pairs=[{"name": "pair", "think": target_name(1), "non_think": target_name(0)}],
    )
    return slate


def _random_unit_vectors(texts: list[str]) -> tuple[dict[str, np.ndarray], None]:
    """A unit vector per text, the same for the same text (seeded by its hash): the simulator audit's embedding
    for synthetic utterances, whose encoding would cost more than the reports being measured."""
    import hashlib

    vectors = {}
    for text in texts:
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))
        v = rng.normal(size=32)
        vectors[text] = v / np.linalg.norm(v)
    return vectors, None


def write_cells(data: Path, targets: list[str], seed: int, with_seeds: bool) -> dict[str, int]:
    """The dialogue tables of `targets` x both pools, and dialogue_scores from them by the real scoring."""
    from eyt_dagster.eyt_bench.dialogue_scoring import score_dialogues
    from eyt_dagster.eyt_bench.simulator_audit import audit
    from eyt_dagster.table_registry import catalog
    from resources.storage.warehouse import store_frame

    rng = np.random.default_rng(seed)
    turns, similarity, verdicts, finals, _ = dialogue_frames(targets, POOLS, DIALOGUES, TURNS, JUDGES, rng)
    n = len(turns)
    turns = turns.assign(
        target_tokens_in=rng.integers(200, 900, n),
        target_tokens_out=rng.integers(20, 200, n),
        target_cost_usd=rng.random(n) * 1e-3,
        simulator_tokens_in=rng.integers(200, 900, n),
        simulator_tokens_out=rng.integers(20, 200, n),
        simulator_cost_usd=rng.random(n) * 1e-3,
    )
    verdicts = verdicts.assign(judge_tokens_in=500, judge_tokens_out=80, judge_cost_usd=2e-4)
    finals = finals.assign(judge_tokens_in=700, judge_tokens_out=60, judge_cost_usd=3e-4)
    scores = score_dialogues(turns, verdicts, finals, similarity, alpha=0.1, combine="mean")
    scores = scores.assign(alpha=0.1, judge_combine="mean")
    audit_rows, _ = audit(turns, _random_unit_vectors)  # the real checks; synthetic vectors stand in for the encoder
    audit_rows = audit_rows.assign(embedding_model="synthetic")
    frames = {
        "dialogue.simulator_audit": audit_rows,
        "dialogue.dialogue_turns": turns,
        "dialogue.intent_similarity": similarity,
        "dialogue.judge_verdicts": verdicts,
        "dialogue.final_intent_verdicts": finals,
        "dialogue.dialogue_scores": scores,
    }
    if with_seeds:
        frames = {"dialogue.chat_seeds": seed_frame(POOLS, DIALOGUES).assign(slate_seed=20260521), **frames}
    for table, rows in frames.items():
        by = ["pool"] if table == "dialogue.chat_seeds" else ["pool", "target"]
        store_frame(data, table, rows, partition_by=by, catalog=catalog())
    return {table.split(".")[-1]: len(rows) for table, rows in frames.items()}


def environment(folder: Path) -> dict[str, str]:
    data = folder / "data"
    return {
        **os.environ,
        "EYT_DATA_DIR": str(data),
        "DAGSTER_HOME": str(data / "dagster_home"),
        "EYT_SLATE": str(folder / "slate.yaml"),
        "PYTHONPATH": str(ROOT),
    }


def child(argv: list[str]) -> dict:
    """In `folder`'s environment: `register` the slate's targets, or `run` the job and return its figures."""
    what, folder = argv[0], Path(argv[1])
    os.environ.update({k: v for k, v in environment(folder).items() if k != "PYTHONPATH"})
    started = time.perf_counter()
    from dagster import DagsterEventType, DagsterInstance, build_reconstructable_job, execute_job

    from eyt_dagster.ops.instance import ensure_dagster_home, register_targets
    from eyt_dagster.slate import load_slate

    ensure_dagster_home()
    with DagsterInstance.get() as instance:
        if what == "register":
            return {"added": len(register_targets(instance, load_slate(os.environ["EYT_SLATE"])))}
        job = build_reconstructable_job(
            "eyt_dagster.ops.launch", "job_by_name", (JOB,), reconstructor_working_directory=str(ROOT)
        )
        run_config = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
        cpu = time.process_time()
        with execute_job(job, instance=instance, raise_on_error=False, run_config=run_config) as result:
            ok, run_id = result.success, result.run_id
            failures = [f"{e.step_key}: {e.message}" for e in result.all_events if e.is_failure and e.step_key]
        cpu = time.process_time() - cpu
        kinds = {DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE}
        steps: dict[str, float] = {}
        opened: dict[str, float] = {}
        first = last = None
        for entry in instance.all_logs(run_id, of_type=kinds):
            key = entry.step_key or ""
            if entry.dagster_event_type == DagsterEventType.STEP_START:
                opened[key] = entry.timestamp
                first = entry.timestamp if first is None else min(first, entry.timestamp)
            elif key in opened:
                steps[key] = entry.timestamp - opened.pop(key)
                last = entry.timestamp if last is None else max(last, entry.timestamp)
    return {
        "ok": ok,
        "failures": failures,
        "steps": steps,
        "run_s": (last - first) if first is not None and last is not None else float("nan"),
        "process_s": time.perf_counter() - started,
        "cpu_s": cpu,  # the job's CPU seconds (every thread of the process): less sensitive to a shared machine's load
    }


def in_child(what: str, folder: Path) -> dict:
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", what, str(folder)],
        cwd=ROOT,
        env=environment(folder),
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{out.stderr[-4000:]}")
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    figures["wall_s"] = time.perf_counter() - started
    return figures


def read_floor(data: Path) -> float:
    """Seconds to read each table the job reads once (every partition, all columns), as the IO manager reads."""
    from resources.storage.warehouse_files import data_files, read_files, table_dir, warehouse_root

    started = time.perf_counter()
    for table in INPUT_TABLES:
        folder = table_dir(warehouse_root(data), f"dialogue.{table}")
        read_files(list(data_files(folder)), folder)
    return time.perf_counter() - started


def bootstrap_floor(n_targets: int, resamples: int) -> float:
    """The resampling no implementation avoids: per cell, one resample of the dialogues' values for each of the
    leaderboard_intervals metrics (16 means or ratios, the macro-F1's class counts), plus the pairwise floor."""
    from pairwise_scale import floor_seconds

    from eyt_dagster.eyt_bench.analysis import MEAN_METRICS, RATIO_METRICS

    rng = np.random.default_rng(0)
    values, idx = rng.random(DIALOGUES), rng.integers(0, DIALOGUES, (resamples, DIALOGUES))
    started = time.perf_counter()
    for _ in range(50):
        values[idx].mean(axis=1)
    per = (time.perf_counter() - started) / 50
    cells = n_targets * len(POOLS)
    return cells * (len(RATIO_METRICS) * 2 + len(MEAN_METRICS) + 3 * 8) * per + floor_seconds(n_targets, resamples)


def short(step: str) -> str:
    return step.rsplit("__", 1)[-1]


def plus_one(folder: Path, n: int) -> dict:
    """Add target n+1 (slate, instance, its partitions' tables) to `folder` and run the job again."""
    (folder / "slate.yaml").write_text(yaml.safe_dump(slate_for(n + 1), sort_keys=False))
    in_child("register", folder)
    write_cells(folder / "data", [target_name(n)], seed=n, with_seeds=False)
    again = in_child("run", folder)
    if not again["ok"]:
        raise RuntimeError("the reports run after one more target failed: " + "; ".join(again["failures"]))
    return again


def repeated_plus_one(folder: Path, n: int, repeats: int) -> list[dict]:
    """The run after one more target, `repeats` times, each from a copy of `folder` as the first run left it."""
    runs = []
    for _ in range(repeats):
        copy = Path(tempfile.mkdtemp(prefix="eyt-reports-again-"))
        try:
            shutil.copytree(folder, copy, dirs_exist_ok=True, symlinks=True)
            runs.append(plus_one(copy, n))
        finally:
            shutil.rmtree(copy, ignore_errors=True)
    return runs


def print_steps(first: dict, again: dict) -> None:
    print(f"  {'step':<28} {'s':>7} {'+1 target s':>12}")
    for step, seconds in sorted(first["steps"].items(), key=lambda kv: -kv[1]):
        print(f"  {short(step):<28} {seconds:>7.2f} {again['steps'].get(step, float('nan')):>12.2f}")


def from_snapshot(snapshot: Path, repeats: int) -> int:
    """The run after one more target from a --snapshot directory (its slate's size is N), `repeats` times."""
    n = sum(
        1 for t in yaml.safe_load((snapshot / "slate.yaml").read_text())["targets"] if t["id"].startswith("target-")
    )
    runs = repeated_plus_one(snapshot, n, repeats)
    for k, again in enumerate(runs, start=1):
        print(
            f"{n} -> {n + 1} targets, run {k} of {repeats}: {again['run_s']:.1f} s (process {again['wall_s']:.1f} s, "
            f"job CPU {again['cpu_s']:.1f} s)"
        )
    steps = {step: [r["steps"].get(step, float("nan")) for r in runs] for step in runs[-1]["steps"]}
    for step, seconds in sorted(steps.items(), key=lambda kv: -kv[1][-1]):
        print(f"  {short(step):<28} " + " ".join(f"{s:>6.2f}" for s in seconds))
    return 0


def run(n: int, keep: Path | None, top: int, repeats: int = 1, snapshot: Path | None = None) -> dict:
    folder = keep or Path(tempfile.mkdtemp(prefix="eyt-reports-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data"
    try:
        (folder / "slate.yaml").write_text(yaml.safe_dump(slate_for(n), sort_keys=False))
        in_child("register", folder)
        started = time.perf_counter()
        counts = write_cells(data, [target_name(k) for k in range(n)], seed=0, with_seeds=True)
        made = time.perf_counter() - started
        print(f"\n{n} targets x {len(POOLS)} pools x {DIALOGUES} dialogues x {TURNS} turns, {len(JUDGES)} judges")
        print("  rows: " + ", ".join(f"{t} {c:,}" for t, c in counts.items()) + f" (written in {made:.1f} s)")
        first = in_child("run", folder)
        if not first["ok"]:
            raise RuntimeError("the reports run failed: " + "; ".join(first["failures"]))
        if snapshot is not None:
            shutil.copytree(folder, snapshot, dirs_exist_ok=True, symlinks=True)
        extra = repeated_plus_one(folder, n, repeats - 1) if repeats > 1 else []
        again = plus_one(folder, n)
        for k, other in enumerate([*extra, again], start=1):
            print(
                f"  +1 target, run {k} of {repeats}: {other['run_s']:.1f} s (process {other['wall_s']:.1f} s, "
                f"job CPU {other['cpu_s']:.1f} s)"
            )
        floors = {"read": read_floor(data), "bootstrap": bootstrap_floor(n, 1000)}
        print(
            f"  run {first['run_s']:.1f} s (process {first['wall_s']:.1f} s, job CPU {first['cpu_s']:.1f} s); "
            f"+1 target: run {again['run_s']:.1f} s "
            f"(process {again['wall_s']:.1f} s, job CPU {again['cpu_s']:.1f} s); floors: read inputs {floors['read']:.1f} s, "
            f"bootstrap {floors['bootstrap']:.1f} s"
        )
        print_steps(first, again)
        return {"n": n, "first": first, "again": again, "floors": floors, "top": top}
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        print(json.dumps(child(argv[1:])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, nargs="+", default=list(SIZES), help="slate sizes, in targets")
    parser.add_argument("--top", type=int, default=4, help="slowest steps shown in the summary table")
    parser.add_argument("--keep", type=Path, help="make the (last) data directory here and keep it")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the +1 target run this many times, each from a copy of the first run's directory (the table "
        "shows the last)",
    )
    parser.add_argument(
        "--snapshot", type=Path, help="copy the (last) size's directory here after its first run, for --from-snapshot"
    )
    parser.add_argument(
        "--from-snapshot",
        type=Path,
        help="only the run after one more target, from a copy of this --snapshot directory (--repeat times)",
    )
    args = parser.parse_args(argv)
    if args.from_snapshot is not None:
        return from_snapshot(args.from_snapshot, args.repeat)
    results = [run(n, args.keep, args.top, args.repeat, args.snapshot) for n in args.targets]
    print("\nN, the whole run, its slowest steps, the run after one more target (seconds)")
    print(f"  {'N':>4} {'run':>7} {'process':>8} {'+1 run':>7} {'+1 proc':>8} {'read fl':>8} {'boot fl':>8}  slowest")
    for r in results:
        slow = sorted(r["first"]["steps"].items(), key=lambda kv: -kv[1])[: args.top]
        shown = ", ".join(f"{short(k)} {v:.1f}" for k, v in slow)
        print(
            f"  {r['n']:>4} {r['first']['run_s']:>7.1f} {r['first']['wall_s']:>8.1f} {r['again']['run_s']:>7.1f} "
            f"{r['again']['wall_s']:>8.1f} {r['floors']['read']:>8.1f} {r['floors']['bootstrap']:>8.1f}  {shown}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
