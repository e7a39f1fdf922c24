"""`eyt dev`: the Dagster UI and daemon start with nothing for the user to interpret (no warning on either stream:
no superseded command, no instance settings in the folder it starts from), on an instance that links the
project's settings; the UI counts the cells of the slate, not every pool the project knows."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from eyt_dagster.ops.instance import INSTANCE_YAML, ensure_dagster_home
from eyt_dagster.slate import default_slate_path, load_slate

from support.dagster_ui import BIN, ROOT, dagster_dev, graphql, tail, wait_until_loaded
from support.slates import write_slate

# What the UI's asset pages count: partitions, and of them materialised, per asset.
STATS = """{ assetNodes(assetKeys: [%s]) { assetKey { path } partitionStats { numPartitions numMaterialized } } }"""
COUNTED = {"dialogue/persona_pool": 2, "dialogue/dialogue_turns": 4, "voice/voiced_turns": 2}


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if "warn" in line.lower()]


@pytest.mark.cli
@pytest.mark.slow
def test_eyt_dev_serves_the_slate_cells_with_no_warning(tmp_path):
    two = [t for t in load_slate(default_slate_path()).targets if t.id in ("reflective-baseline", "terse-baseline")]
    data = tmp_path / "data"
    env = {
        **{k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"},  # eyt makes $EYT_DATA_DIR/dagster_home
        "EYT_DATA_DIR": str(data),
        "HF_HUB_OFFLINE": "1",
        "EYT_SLATE": str(write_slate(tmp_path, targets=[t.model_dump(mode="json", exclude_none=True) for t in two])),
    }
    # the slate's targets as partitions, as `eyt run` or `eyt refresh` leave them
    registered = subprocess.run(
        [BIN / "eyt", "register-targets"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert registered.returncode == 0, registered.stderr[-2000:]
    out, err = tmp_path / "dev.out", tmp_path / "dev.err"
    with dagster_dev(env, out, err) as (server, base, _):
        wait_until_loaded(server, base, out)
        keys = ", ".join(f"{{path: {json.dumps(k.split('/'))}}}" for k in COUNTED)
        nodes = graphql(base, STATS % keys)["assetNodes"]
        counted = {"/".join(n["assetKey"]["path"]): n["partitionStats"] for n in nodes}
        started = out.read_text(), err.read_text()  # the start, up to the UI serving the loaded code location
    # two targets on the slate's two pools (the Chinese pool is the project's, not the slate's); nothing run yet
    assert counted == {k: {"numPartitions": n, "numMaterialized": 0} for k, n in COUNTED.items()}, counted
    assert "Serving dagster-webserver" in started[0]
    assert _warnings(started[0]) == [] and _warnings(started[1]) == [], started
    # (stopping the whole process group at once may make Dagster's shutdown log that its code server exited, as
    # Ctrl-C in a terminal may: a line of the stop, not of the start, and Dagster's own)
    assert server.stopped_by == signal.SIGTERM, tail(out)
    assert os.readlink(data / "dagster_home" / "dagster.yaml") == str(INSTANCE_YAML)


@pytest.mark.unit
def test_a_dangling_settings_link_is_linked_to_the_repositorys_settings(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(tmp_path / "moved" / "dagster.yaml")  # a clone that moved: the link dangles
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert INSTANCE_YAML == ROOT / "dagster.yaml" and INSTANCE_YAML.is_file()
    assert ensure_dagster_home() == home
    assert os.readlink(home / "dagster.yaml") == str(INSTANCE_YAML)
    # an instance's own settings (a file, or a link elsewhere) are left as they are
    (home / "dagster.yaml").unlink()
    (home / "dagster.yaml").write_text("telemetry: {enabled: false}\n")
    ensure_dagster_home()
    assert (home / "dagster.yaml").read_text() == "telemetry: {enabled: false}\n"
