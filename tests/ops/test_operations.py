"""`eyt refresh` and `eyt remove-target`: the planner on hand-made status maps, then the commands end to end on a
small slate (one pool, embedded targets) in a temporary EYT_DATA_DIR."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import yaml

from eyt_dagster.ops import refresh_plan as ops
from eyt_dagster.slate import default_slate_path

from support.slates import write_slate

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# A miniature of the graph: a pool asset, two target x pool assets and a report, in three jobs.
POOL, TURNS, JUDGE, SCORES, BOARD = "d/chat_seeds", "d/turns", "d/judge", "d/scores", "d/board"
JOB_OF = {POOL: "pools", TURNS: "dialogues", JUDGE: "dialogues", SCORES: "dialogues", BOARD: "reports"}
PARENTS = {POOL: [], TURNS: [POOL], JUDGE: [TURNS], SCORES: [TURNS, JUDGE], BOARD: [SCORES, JUDGE]}
CELLS = ["p1|a", "p1|b", "p2|a"]


def statuses(changed=None):
    """Every asset partition FRESH, updated with `changed` ({(asset, partition): status})."""
    result = {(POOL, "p1"): "FRESH", (POOL, "p2"): "FRESH", (BOARD, None): "FRESH"}
    result.update({(asset, cell): "FRESH" for asset in (TURNS, JUDGE, SCORES) for cell in CELLS})
    result.update(changed or {})
    return result


def children(key):
    asset, partition = key
    if asset == POOL:
        return [(TURNS, c) for c in CELLS if c.startswith(partition + "|")]
    if asset == TURNS:
        return [(JUDGE, partition), (SCORES, partition)]
    if asset == JUDGE:
        return [(SCORES, partition), (BOARD, None)]
    if asset == SCORES:
        return [(BOARD, None)]
    return []


def plan(status_map):
    findings = ops.propagate(ops.not_fresh(status_map), status_map, children)
    order = ops.job_order({"pools": [POOL], "dialogues": [TURNS, JUDGE, SCORES], "reports": [BOARD]}, PARENTS)
    return findings, ops.plan_runs(findings, JOB_OF, order, children)


@pytest.mark.unit
def test_all_fresh_plans_nothing():
    findings, runs = plan(statuses())
    assert findings == {} and runs == []
    assert ops.format_findings(findings, 12).startswith("nothing to do")


@pytest.mark.unit
def test_a_stale_judge_partition_reruns_it_its_downstream_and_the_report_but_not_the_turns():
    findings, runs = plan(statuses({(JUDGE, "p1|a"): "STALE"}))
    assert set(findings) == {(JUDGE, "p1|a"), (SCORES, "p1|a"), (BOARD, None)}
    assert findings[(SCORES, "p1|a")].causes == ("upstream d/judge[p1|a] will be re-materialised",)
    assert [(r.job, r.partition, r.assets) for r in runs] == [
        ("dialogues", "p1|a", (JUDGE, SCORES)),
        ("reports", None, (BOARD,)),
    ]
    assert runs[1].after == (0,)


@pytest.mark.unit
def test_a_new_target_runs_its_cells_once_each_then_the_report():
    # a new target "c": its cells are MISSING for every dialogue asset; the pools are fresh
    status_map = statuses({(asset, cell): "MISSING" for asset in (TURNS, JUDGE, SCORES) for cell in ("p1|c", "p2|c")})
    findings, runs = plan(status_map)
    assert [(r.job, r.partition) for r in runs] == [("dialogues", "p1|c"), ("dialogues", "p2|c"), ("reports", None)]
    assert all(r.assets == (JUDGE, SCORES, TURNS) for r in runs[:2])  # one run for the job's three assets
    assert runs[2].after == (0, 1)
    table = ops.format_findings(findings, 12)
    assert (
        "p1|a" not in table and "7 asset partition(s) to materialise (6 missing, 1 stale, 0 failed); 12 fresh" in table
    )


@pytest.mark.unit
def test_a_stale_pool_reruns_the_cells_of_that_pool_only():
    _findings, runs = plan(statuses({(POOL, "p2"): "STALE"}))
    assert [(r.job, r.partition) for r in runs] == [("pools", "p2"), ("dialogues", "p2|a"), ("reports", None)]
    assert runs[1].assets == (JUDGE, SCORES, TURNS) and runs[1].after == (0,)


@pytest.mark.unit
def test_propagation_stays_inside_the_statuses_given():
    status_map = statuses({(JUDGE, "p1|a"): "STALE"})
    del status_map[(BOARD, None)]  # out of scope (e.g. --no-speech)
    findings = ops.propagate(ops.not_fresh(status_map), status_map, children)
    assert set(findings) == {(JUDGE, "p1|a"), (SCORES, "p1|a")}


@pytest.mark.unit
def test_outputs_of_one_op_are_planned_together():
    status_map = statuses({(TURNS, "p1|a"): "MISSING"})
    findings = ops.propagate(ops.not_fresh(status_map), status_map, lambda key: [], {TURNS: [JUDGE], JUDGE: [TURNS]})
    assert set(findings) == {(TURNS, "p1|a"), (JUDGE, "p1|a")}
    assert findings[(JUDGE, "p1|a")].causes == ("computed together with d/turns[p1|a]",)


@pytest.mark.unit
def test_failed_runs_skip_their_partitioned_downstream_but_not_the_reports():
    status_map = statuses({(POOL, "p1"): "STALE"})
    _, runs = plan(status_map)
    assert [r.label for r in runs] == ["pools [p1]", "dialogues [p1|a]", "dialogues [p1|b]", "reports"]
    assert ops.skipped_by_failure(runs, {0}, 1) and ops.skipped_by_failure(runs, {0}, 2)
    assert not ops.skipped_by_failure(runs, {0, 1, 2}, 3)
    assert not ops.skipped_by_failure(runs, set(), 1)


@pytest.mark.unit
def test_job_order_follows_the_asset_graph_and_refuses_cycles():
    jobs = {
        "speech_reports": ["s/report"],
        "speech_build": ["s/items"],
        "eyt_reports": [BOARD],
        "eyt_dialogues": [TURNS, SCORES],
        "eyt_pools": [POOL],
    }
    parents = {**PARENTS, "s/report": ["s/items"], "s/items": []}
    assert ops.job_order(jobs, parents) == [
        "eyt_pools",
        "eyt_dialogues",
        "eyt_reports",
        "speech_build",
        "speech_reports",
    ]
    with pytest.raises(ValueError, match="cycle"):
        ops.job_order({"x": ["a"], "y": ["b"]}, {"a": ["b"], "b": ["a"]})


@pytest.mark.unit
def test_descendants_include_the_assets_themselves():
    assert ops.descendants([JUDGE], PARENTS) == {JUDGE, SCORES, BOARD}
    assert ops.descendants([BOARD], PARENTS) == {BOARD}


# ---- end to end: eyt run, then eyt refresh / remove-target as subprocesses (each loads the code fresh) ----


def eyt(args, env):
    """`eyt ARGS` in a fresh process (so prompt hashes are read anew), with no terminal on stdin."""
    started = time.monotonic()
    result = subprocess.run(
        [BIN / "eyt", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL
    )
    print(f"eyt {' '.join(args)}: exit {result.returncode} in {time.monotonic() - started:.1f} s")
    return result


def set_slate(directory, ids, pools=None):
    """The small test slate with these default targets and pools (default: nemotron_usa from the fixture)."""
    default = {t["id"]: t for t in yaml.safe_load(default_slate_path().read_text())["targets"]}
    return write_slate(
        directory,
        targets=[default[i] for i in ids],
        dialogues_per_pool=2,
        pools=pools or {"nemotron_usa": {"source": "fixture"}},
    )


def runs_since(home, after):
    """(job, partition, selected asset names) of the runs created after `after` runs, oldest first."""
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        runs = list(reversed(instance.get_runs()))[after:]
    return [
        (r.job_name, r.tags.get("dagster/partition"), sorted(k.path[-1] for k in r.asset_selection or [])) for r in runs
    ], after + len(runs)


def rows_of(data, target):
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        tables = con.execute(
            "SELECT DISTINCT table_schema, table_name FROM information_schema.columns WHERE column_name = 'target'"
        ).fetchall()
        return {
            f"{s}.{t}": con.execute(f'SELECT count(*) FROM "{s}"."{t}" WHERE target = ?', [target]).fetchone()[0]
            for s, t in tables
        }


def partition_keys(home, name):
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        return set(instance.get_dynamic_partitions(name))


def stale_table(stdout):
    """{(asset name, partition)} of the status table `eyt refresh` prints (continuation rows inherit the asset)."""
    found, asset = set(), None
    for line in stdout.splitlines():
        match = re.match(r"^(\S+)?\s+(\S+)\s+(STALE|MISSING)\s", line)
        if match:
            asset = match.group(1) or asset
            found.add((asset.split("/")[-1], match.group(2)))
    return found


@pytest.mark.cli
@pytest.mark.slow
def test_refresh_and_remove_target_end_to_end(tmp_path):
    data = tmp_path / "data"
    home = data / "dagster_home"
    env = {
        **os.environ,
        "EYT_DATA_DIR": str(data),
        "HF_HUB_OFFLINE": "1",
        "EYT_SLATE": str(set_slate(tmp_path, ["reflective-baseline"])),
    }
    env.pop("DAGSTER_HOME", None)
    env.pop("EYT_PROMPTS", None)

    first = eyt(["run", "--no-speech"], env)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    clean = eyt(["refresh", "--dry-run", "--no-speech"], env)
    assert clean.returncode == 0 and "nothing to do" in clean.stdout, clean.stdout + clean.stderr[-2000:]
    _, seen = runs_since(home, 0)

    # A new target, and a new pool whose source cannot be read: the pool run fails, the cells that read it are
    # skipped, the new target's cell on the good pool runs (once), the reports run; the exit status is 1.
    broken_pool = {"source": "local", "path": str(tmp_path / "nowhere")}
    set_slate(
        tmp_path,
        ["reflective-baseline", "terse-baseline"],
        {"nemotron_usa": {"source": "fixture"}, "personamem_v2": broken_pool},
    )
    added = eyt(["refresh", "--no-speech"], env)
    assert added.returncode == 1, added.stdout[-3000:] + added.stderr[-2000:]
    assert "FAILED eyt_pools [personamem_v2]" in added.stdout
    assert "skip   eyt_dialogues [personamem_v2|terse-baseline]" in added.stdout
    launched, seen = runs_since(home, seen)
    # the failed pool and the new cell are independent (launched side by side, in either order); the reports last
    assert sorted((job, partition) for job, partition, _ in launched[:2]) == [
        ("eyt_dialogues", "nemotron_usa|terse-baseline"),
        ("eyt_pools", "personamem_v2"),
    ]
    # the reports, then the model cards and paper tables that read them
    assert [(job, partition) for job, partition, _ in launched[2:]] == [
        ("eyt_reports", None),
        ("unified_reports", None),
    ]
    assert [assets for job, _, assets in launched if job == "eyt_dialogues"] == [
        [
            "dialogue_scores",
            "dialogue_turns",
            "final_intent_verdicts",
            "intent_similarity",
            "judge_verdicts",
            "language_consistency",
            "repeat_dialogues",
            "repeat_scores",
            "simulator_audit",
        ]
    ]
    assert rows_of(data, "terse-baseline")["dialogue.dialogue_turns"] > 0
    set_slate(tmp_path, ["reflective-baseline", "terse-baseline"])  # the pool leaves the slate again

    # A judge prompt edit: the judge verdicts of both targets and what reads them are stale, not the turns.
    prompts = yaml.safe_load((ROOT / "eyt_dagster" / "prompts" / "default_en.yaml").read_text())
    prompts["judge_turn"]["system"] = "Be careful. " + prompts["judge_turn"]["system"]
    (tmp_path / "prompts.yaml").write_text(yaml.safe_dump(prompts, sort_keys=False))
    env["EYT_PROMPTS"] = str(tmp_path / "prompts.yaml")
    edited = eyt(["refresh", "--no-speech"], env)
    assert edited.returncode == 0, edited.stdout[-3000:] + edited.stderr[-2000:]
    # the pool that failed holds no result, and the Chinese pool was never played: neither is named as left alone
    assert "left alone, not in the slate" not in edited.stdout
    stale = stale_table(edited.stdout)
    cells = ["nemotron_usa|reflective-baseline", "nemotron_usa|terse-baseline"]
    partitioned = {(a, p) for a, p in stale if p != "-"}
    # repeat_scores judges the repeated samples with the same prompts (none here: repeats 1, so it asks nothing)
    assert partitioned == {(a, c) for a in ("judge_verdicts", "dialogue_scores", "repeat_scores") for c in cells}
    assert ("leaderboard", "-") in stale and ("cross_judge_verdicts", "-") in stale
    launched, seen = runs_since(home, seen)
    assert sorted((job, partition) for job, partition, _ in launched[:2]) == [
        ("eyt_dialogues", cells[0]),
        ("eyt_dialogues", cells[1]),
    ]
    # the reports, then the model cards and paper tables that read them
    assert [(job, partition) for job, partition, _ in launched[2:]] == [
        ("eyt_reports", None),
        ("unified_reports", None),
    ]
    assert all(assets == ["dialogue_scores", "judge_verdicts", "repeat_scores"] for _, _, assets in launched[:2])
    after = eyt(["refresh", "--dry-run", "--no-speech"], env)
    assert after.returncode == 0 and "nothing to do" in after.stdout, after.stdout[-3000:]

    # Deleting a target: refused without --yes when stdin is no terminal (nothing deleted); with --yes, its rows
    # in every table with a target column and its partition key go.
    set_slate(tmp_path, ["reflective-baseline"])
    refused = eyt(["remove-target", "terse-baseline"], env)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert rows_of(data, "terse-baseline")["dialogue.dialogue_turns"] > 0
    assert partition_keys(home, "targets") == {"reflective-baseline", "terse-baseline"}
    removed = eyt(["remove-target", "terse-baseline", "--yes", "--no-reports"], env)
    assert removed.returncode == 0, removed.stdout[-2000:] + removed.stderr[-2000:]
    assert set(rows_of(data, "terse-baseline").values()) == {0}
    assert rows_of(data, "reflective-baseline")["dialogue.dialogue_turns"] > 0
    assert partition_keys(home, "targets") == {"reflective-baseline"}
    assert "eyt refresh --reports" in removed.stdout

    # The reports leave the removed target: a refresh recomputes them (the slate's target list is one of their
    # settings) over the slate's targets only
    reports = eyt(["refresh", "--no-speech"], env)
    assert reports.returncode == 0, reports.stdout[-3000:] + reports.stderr[-2000:]
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        assert {t for (t,) in con.execute("SELECT DISTINCT target FROM dialogue.leaderboard").fetchall()} == {
            "reflective-baseline"
        }
        assert {t for (t,) in con.execute("SELECT DISTINCT target FROM reports.model_cards").fetchall()} <= {
            "reflective-baseline",
            "random-chooser-baseline",
            "acoustic-chooser-baseline",
        }

    # A target still in the slate: refused with one line naming the flag; with --force its rows go and the next
    # refresh plans it again from scratch (this instance cannot wipe a partition's history: a marker says so)
    kept = eyt(["remove-target", "reflective-baseline", "--yes"], env)
    assert kept.returncode == 2 and "--force" in kept.stderr and len(kept.stderr.strip().splitlines()) == 1
    forced = eyt(["remove-target", "reflective-baseline", "--yes", "--force", "--no-reports"], env)
    assert forced.returncode == 0, forced.stdout[-2000:] + forced.stderr[-2000:]
    assert "plans 'reflective-baseline' again" in forced.stdout
    again = eyt(["refresh", "--dry-run", "--no-speech"], env)
    assert "nothing to do" not in again.stdout, again.stdout[-3000:]
    missing = [line for line in again.stdout.splitlines() if "nemotron_usa|reflective-baseline" in line]
    assert any("MISSING" in line for line in missing), again.stdout[-3000:]
