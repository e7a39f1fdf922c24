"""Where a run is among its steps, read from a real Dagster instance (sqlite on disk, as `eyt run` has it) while the
run executes in another thread: the run found by its launch tag, the step running now, the steps done of the
steps it executes, and the line the display shows for it."""

from __future__ import annotations

import threading
import time

import pytest
from dagster import asset, instance_for_test, materialize

from eyt_dagster.ops.progress_display import steps_text
from eyt_dagster.ops.run_steps import InstanceSteps, RunSteps
from resources.runs.progress_files import LAUNCH_TAG

pytestmark = pytest.mark.materialisation


def test_the_steps_of_a_running_run_from_the_instance(tmp_path):
    release = threading.Event()

    @asset
    def first() -> int:
        return 1

    @asset
    def second(first: int) -> int:
        assert release.wait(60)  # the run stays in this step until the test has looked
        return first + 1

    @asset
    def third(second: int) -> int:
        return second + 1

    with instance_for_test(temp_dir=str(tmp_path)) as instance:
        steps = InstanceSteps(instance)
        assert steps("token:0") is None  # no run with the tag yet
        run = threading.Thread(
            target=materialize,
            args=([first, second, third],),
            kwargs={"instance": instance, "tags": {LAUNCH_TAG: "token:0"}},
        )
        run.start()
        try:
            deadline = time.monotonic() + 60
            while (now := steps("token:0")) is None or now.running != ("second",):
                assert time.monotonic() < deadline, now
                time.sleep(0.05)
            assert now == RunSteps(running=("second",), done=1, total=3)
            assert steps_text(now) == "second (1 of 3 steps done)"
            assert steps("token:1") is None  # another run of the command: not this one
        finally:
            release.set()
            run.join(60)
        assert steps("token:0") == RunSteps(running=(), done=3, total=3)  # the events since the last look
        assert steps_text(RunSteps(running=(), done=3, total=3)) == "finishing (3 of 3 steps done)"
