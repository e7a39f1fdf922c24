"""Partition runs side by side: the scheduler on hand-made runs (order, bound, skips), then
`eyt run --parallel 2` on a small slate in a temporary EYT_DATA_DIR through worker processes."""

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import duckdb
import pytest

from eyt_dagster.ops.run_plan import FAILED, OK, SKIPPED, Run, eyt_runs, run_all

from support.slates import write_slate


class Recorder:
    """Starts each run in a thread that sleeps a little; records start/end order and the peak of runs at once."""

    def __init__(self, fail=(), seconds=0.05):
        self.pool = ThreadPoolExecutor(8)
        self.fail, self.seconds = set(fail), seconds
        self.lock = threading.Lock()
        self.events, self.now, self.peak = [], 0, 0

    def start(self, index, run) -> Future:
        def body():
            with self.lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
                self.events.append(("start", index))
            time.sleep(self.seconds)
            with self.lock:
                self.now -= 1
                self.events.append(("end", index))
            return run.label not in self.fail

        return self.pool.submit(body)

    def position(self, kind, index):
        return self.events.index((kind, index))


@pytest.mark.unit
def test_eyt_runs_wait_for_their_inputs_and_run_side_by_side_within_the_bound():
    runs = eyt_runs(["p1", "p2"], ["a", "b"], subscales=["s1", "s2"], speech_targets=["x"])
    labels = [r.label for r in runs]
    recorder = Recorder()
    outcome = run_all(runs, recorder.start, parallel=3)
    assert set(outcome.values()) == {OK} and len(outcome) == len(runs) == 13
    assert recorder.peak == 3  # side by side, never more than asked
    index = {label: i for i, label in enumerate(labels)}

    def before(first, then):
        assert recorder.position("end", index[first]) < recorder.position("start", index[then]), (first, then)

    for target in "ab":
        for pool in ("p1", "p2"):
            before(f"eyt_pools [{pool}]", f"eyt_dialogues [{pool}|{target}]")
            before(f"eyt_dialogues [{pool}|{target}]", "eyt_reports")
    for slug in ("s1", "s2"):
        before(f"speech_build [{slug}]", "speech_eval [x]")
        before(f"speech_build [{slug}]", "speech_reports")
    before("speech_eval [x]", "seq_reports")
    before("seq_reports", "unified_reports")
    before("eyt_reports", "unified_reports")
    assert {i for kind, i in recorder.events if kind == "end"} == set(range(len(runs)))
    # the cells of one target run side by side (the endpoint's slots, not the plan, hold its budget)
    overlap = recorder.position("start", index["eyt_dialogues [p2|a]"]) < recorder.position(
        "end", index["eyt_dialogues [p1|a]"]
    )
    assert overlap, recorder.events


@pytest.mark.unit
def test_a_failed_pool_skips_its_cells_but_not_the_reports_and_one_at_a_time_keeps_the_list_order():
    runs = eyt_runs(["p1", "p2"], ["a"], subscales=[], speech=False)
    recorder = Recorder(fail={"eyt_pools [p2]"})
    skipped = []
    outcome = run_all(runs, recorder.start, parallel=1, on_skip=lambda i, run: skipped.append(run.label))
    labels = [r.label for r in runs]
    assert {labels[i]: state for i, state in outcome.items()} == {
        "eyt_pools [p1]": OK,
        "eyt_pools [p2]": FAILED,
        "eyt_dialogues [p1|a]": OK,
        "eyt_dialogues [p2|a]": SKIPPED,
        "eyt_reports": OK,
        "unified_reports": OK,
    }
    assert skipped == ["eyt_dialogues [p2|a]"]
    assert [i for kind, i in recorder.events if kind == "start"] == [0, 1, 2, 4, 5]


@pytest.mark.unit
def test_a_launcher_that_raises_is_a_failed_run_and_bad_plans_are_refused():
    def start(index, run):
        future = Future()
        future.set_exception(RuntimeError("worker died"))
        return future

    assert run_all([Run("j", label="one"), Run("j", label="two", after=(0,))], start, 2) == {0: FAILED, 1: SKIPPED}
    with pytest.raises(ValueError, match="only earlier runs"):
        run_all([Run("j", after=(1,)), Run("j")], start, 2)
    with pytest.raises(ValueError, match="at least 1"):
        run_all([], start, 0)


@pytest.mark.cli
@pytest.mark.slow
def test_eyt_run_parallel_writes_every_partition_whole_and_fails_loudly(tmp_path, monkeypatch, capsys):
    from dagster import DagsterInstance, RunsFilter

    from assets.eyt_bench.partitions import partition_tags
    from eyt_dagster.ops.cli import main
    from eyt_dagster.ops.launch import execute_runs

    data = tmp_path / "data"
    monkeypatch.setenv("EYT_DATA_DIR", str(data))
    monkeypatch.setenv("EYT_SLATE", str(write_slate(tmp_path, dialogues_per_pool=3)))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    targets = ["--target", "reflective-baseline", "--target", "terse-baseline"]
    assert main(["run", "--no-speech", "--no-reports", "--parallel", "2", *targets]) == 0
    out = capsys.readouterr().out
    assert out.count("ok     eyt_dialogues") == 4 and "FAILED" not in out

    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        cells = con.execute(
            "SELECT target, pool, count(DISTINCT seed_id) FROM dialogue.dialogue_turns GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        scored = con.execute("SELECT count(*) FROM dialogue.dialogue_scores").fetchone()[0]
    assert cells == [
        (t, p, 3) for t in ("reflective-baseline", "terse-baseline") for p in ("nemotron_usa", "personamem_v2")
    ]
    assert scored == 12  # 2 targets x 2 pools x 3 dialogues, one score row each

    with DagsterInstance.get() as instance:
        runs = instance.get_runs(RunsFilter(job_name="eyt_dialogues"))
        pools = {r.tags["dagster/partition"]: r for r in instance.get_runs(RunsFilter(job_name="eyt_pools"))}
        records = {r.dagster_run.run_id: r for r in instance.get_run_records()}
        assert len(runs) == 4 and all(r.is_success for r in runs)
        # each cell started after its pool ended; worker processes, not this one, executed them
        for r in runs:
            pool = records[pools[r.tags["dagster/partition/pool"]].run_id]
            assert records[r.run_id].start_time >= pool.end_time
        assert len({r.tags["eyt/pid"] for r in runs}) >= 1 and str(__import__("os").getpid()) not in {
            r.tags["eyt/pid"] for r in runs
        }
        # the worker processes ran two cells at once: some pair of runs overlapped in time
        spans = sorted((records[r.run_id].start_time, records[r.run_id].end_time) for r in runs)
        assert any(spans[i + 1][0] < spans[i][1] for i in range(len(spans) - 1)), spans

        # the judge's steps are not held one at a time on one machine (dagster.yaml sets no pool limit: the
        # endpoint's lock files keep its budget, docs/endpoint-budgets.md); a cluster's pools are tested below

        # a run that fails (a target the instance does not know) makes the whole call fail
        bad = Run("eyt_dialogues", partition_tags("gpt-9", "nemotron_usa"), "eyt_dialogues [nemotron_usa|gpt-9]")
        good = Run("eyt_pools", {"dagster/partition": "nemotron_usa"}, "eyt_pools [nemotron_usa]")
        assert execute_runs(instance, [good, bad], 2) is False
    assert "FAILED eyt_dialogues [nemotron_usa|gpt-9]" in capsys.readouterr().out


@pytest.mark.materialisation
def test_the_pools_get_their_limit_before_any_run(tmp_path):
    import yaml
    from dagster import DagsterInstance

    from eyt_dagster.ops.instance import INSTANCE_YAML, PROJECT_ROOT
    from eyt_dagster.ops.launch import ensure_pools

    # a cluster's instance limits the judge and simulator pools (deploy/dagster.yaml's concurrency settings)
    cluster = yaml.safe_load((PROJECT_ROOT / "deploy" / "dagster.yaml").read_text())["concurrency"]
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "dagster.yaml").write_text(yaml.safe_dump({"concurrency": cluster}))
    with DagsterInstance.from_config(str(tmp_path / "cluster")) as instance:
        assert not {"eyt_judge", "eyt_simulator"} & instance.event_log_storage.get_concurrency_keys()
        ensure_pools(instance)
        ensure_pools(instance)  # again: no error, limits unchanged
        for pool in ("eyt_judge", "eyt_simulator"):
            assert (
                instance.event_log_storage.get_concurrency_info(pool).slot_count == 1
            )  # deploy/dagster.yaml's default

    # one machine's instance leaves them unlimited (the endpoints' lock files hold the budgets), and keeps a limit
    # set by hand (`dagster instance concurrency set eyt_judge 2`)
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "dagster.yaml").write_text(INSTANCE_YAML.read_text())
    with DagsterInstance.from_config(str(tmp_path / "local")) as instance:
        ensure_pools(instance)
        assert not {"eyt_judge", "eyt_simulator"} & instance.event_log_storage.get_concurrency_keys()
        instance.event_log_storage.set_concurrency_slots("eyt_judge", 2)
        ensure_pools(instance)
        assert instance.event_log_storage.get_concurrency_info("eyt_judge").slot_count == 2
