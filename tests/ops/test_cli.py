"""The terminal paths a user (or cron) takes: `eyt run` and `dagster job execute` on one partition."""

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from support.slates import write_slate

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(args, env, timeout=300):
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cli")
    env = {
        **os.environ,
        "EYT_DATA_DIR": str(directory / "data"),
        "EYT_SLATE": str(write_slate(directory, dialogues_per_pool=3)),
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("DAGSTER_HOME", None)
    return env


@pytest.mark.slow
def test_eyt_run_then_dagster_job_execute_one_partition(cli_env):
    first = run(
        [
            BIN / "eyt",
            "run",
            "--pool",
            "nemotron_usa",
            "--target",
            "reflective-baseline",
            "--subscale",
            "stress_management_optimism",
        ],
        cli_env,
    )
    assert first.returncode == 0, first.stderr[-2000:]
    assert "ok     eyt_pools [nemotron_usa]" in first.stdout and "ok     eyt_reports" in first.stdout
    assert (
        "ok     speech_build [stress_management_optimism]" in first.stdout and "speech_build [self" not in first.stdout
    )
    assert "embedded baseline" in first.stdout  # the terminal report names baselines as such
    # the packaged slate's cascade plays the spoken EYT-Bench too, then its reports
    assert "ok     eyt_voice [nemotron_usa|reflective-baseline]" in first.stdout
    assert "ok     voice_reports" in first.stdout

    env = {**cli_env, "DAGSTER_HOME": str(Path(cli_env["EYT_DATA_DIR"]) / "dagster_home")}
    tags = {
        "dagster/partition": "nemotron_usa|terse-baseline",
        "dagster/partition/pool": "nemotron_usa",
        "dagster/partition/target": "terse-baseline",
    }
    second = run(
        [
            BIN / "dagster",
            "job",
            "execute",
            "-m",
            "eyt_dagster.definitions",
            "-j",
            "eyt_dialogues",
            "--tags",
            json.dumps(tags),
        ],
        env,
    )
    assert second.returncode == 0, second.stderr[-2000:]

    con = duckdb.connect(str(Path(cli_env["EYT_DATA_DIR"]) / "eyt.duckdb"), read_only=True)
    cells = con.execute(
        "SELECT target, pool, count(DISTINCT seed_id) FROM dialogue.dialogue_turns GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    con.close()
    assert cells == [("reflective-baseline", "nemotron_usa", 3), ("terse-baseline", "nemotron_usa", 3)]

    from dagster import DagsterInstance, RunsFilter

    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        runs = instance.get_runs(RunsFilter(job_name="eyt_dialogues"))
    assert sorted(r.tags["dagster/partition"] for r in runs) == [
        "nemotron_usa|reflective-baseline",
        "nemotron_usa|terse-baseline",
    ]
    assert all(r.is_success for r in runs)

    # the reports' cron line of docs/operations.md, without a daemon: exit 0 and a successful run in the instance
    reports = run([BIN / "dagster", "job", "execute", "-m", "eyt_dagster.definitions", "-j", "eyt_reports"], env)
    assert reports.returncode == 0, reports.stderr[-2000:]
    # a run that fails (a target the slate does not have) exits non-zero, for cron's mail or a wrapper's alert
    bad_tags = {
        "dagster/partition": "nemotron_usa|gpt-9",
        "dagster/partition/pool": "nemotron_usa",
        "dagster/partition/target": "gpt-9",
    }
    failed = run(
        [
            BIN / "dagster",
            "job",
            "execute",
            "-m",
            "eyt_dagster.definitions",
            "-j",
            "eyt_dialogues",
            "--tags",
            json.dumps(bad_tags),
        ],
        env,
    )
    assert failed.returncode != 0
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        report_runs = instance.get_runs(RunsFilter(job_name="eyt_reports"))
    assert len(report_runs) == 2 and all(r.is_success for r in report_runs)


def test_bad_slate_exits_2_with_the_field_named(tmp_path, cli_env):
    bad = write_slate(tmp_path, t_max=1)
    result = run([BIN / "eyt", "run"], {**cli_env, "EYT_SLATE": str(bad)})
    assert result.returncode == 2
    assert str(bad) in result.stderr and "t_max" in result.stderr and "Traceback" not in result.stderr


def test_unknown_target_is_refused(cli_env):
    result = run([BIN / "eyt", "run", "--target", "gpt-9"], cli_env)
    assert result.returncode == 2 and "gpt-9" in result.stderr


def test_a_pool_the_slate_does_not_play_is_refused(cli_env):
    # the packaged slate's pools are the English ones: the Chinese pool is no partition of its code location
    result = run([BIN / "eyt", "plan", "--pool", "cped"], cli_env)
    assert result.returncode == 2 and "pool(s) ['cped'] are not in the slate" in result.stderr
    assert "its pools are ['nemotron_usa', 'personamem_v2']" in result.stderr


def test_eyt_takes_progress_every_on_the_settings_terms(capsys):
    """--progress-every accepts what EYT_PROGRESS_EVERY accepts (eyt_dagster/core/env_settings.py)."""
    from eyt_dagster.ops.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["run", "--progress-every", "-1"])
    assert stopped.value.code == 2
    assert "expected a number of seconds, 0 or more, got '-1'" in capsys.readouterr().err
