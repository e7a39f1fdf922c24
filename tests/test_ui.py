"""The Dagster UI, driven in a real headless Chromium (Debian's `chromium`, installed by `.ci/run`).

`eyt run` materialises a small slate into a temporary instance; `eyt dev`, as the README says to start the UI,
serves it on a free localhost port; the browser opens the asset graph, the catalog of each group and the leaderboard's events, and waits
for what the React app renders from its GraphQL data; then the server is stopped by process group and the
port must be closed, with no process of the server left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
import yaml

from eyt_dagster.ops.instance import INSTANCE_YAML
from eyt_dagster.slate import default_slate_path

from support.dagster_ui import BIN, ROOT, dagster_dev, graphql, port_open, tail, wait_until_loaded
from support.slates import write_slate
from support.ui_browser import CHROMIUM, Chromium, chromium_path, live_group_members

GROUPS = ("dialogue", "reports", "speech")  # the groups of the assets NAMED below
ALL_GROUPS = (*GROUPS, "voice", "voice_reports")  # every group of the code location (the spoken EYT-Bench's too)
# Assets the test names; every other asset of each group comes from the code location (GraphQL).
NAMED = {
    "dialogue/dialogue_turns": "dialogue",
    "dialogue/leaderboard": "reports",
    "speech/eq_items": "speech",
    "speech/slm_choices": "speech",
}
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def node_matches(label: str, name: str) -> bool:
    """The graph shortens long names with an ellipsis in the middle: 'final_in…_verdicts'."""
    if "…" not in label:
        return label == name
    head, _, rest = label.partition("…")
    return name.startswith(head) and name.endswith(rest)


def png_facts(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct colours) of a PNG; fails unless the file is one."""
    from PIL import Image

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    with Image.open(path) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        return image.width, image.height, len(colours) if colours else 1 << 20


def small_slate_env(directory: Path) -> dict[str, str]:
    """The environment of a small slate (two embedded targets) over a temporary data directory, with the
    instance made where `eyt` makes it ($EYT_DATA_DIR/dagster_home, the repo's dagster.yaml linked in)."""
    slate = yaml.safe_load(default_slate_path().read_text())
    targets = [t for t in slate["targets"] if t["id"] in ("reflective-baseline", "terse-baseline")]
    home = directory / "data" / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").symlink_to(INSTANCE_YAML)
    from dagster import DagsterInstance

    # Create the instance's SQLite storages now: `eyt run` and `dagster dev` start together, and two processes
    # creating them at once race ("table runs already exists").
    with DagsterInstance.from_config(str(home)):
        pass
    return {
        **os.environ,
        "EYT_DATA_DIR": str(directory / "data"),
        "HF_HUB_OFFLINE": "1",
        "DAGSTER_HOME": str(home),
        "EYT_SLATE": str(write_slate(directory, targets=targets)),
    }


def materialise(env: dict[str, str]) -> str:
    """`eyt run` on one pool without SpeechEQ; returns the id of its eyt_reports run."""
    env = {k: v for k, v in env.items() if k != "DAGSTER_HOME"}  # eyt sets it to $EYT_DATA_DIR/dagster_home
    result = subprocess.run(
        [BIN / "eyt", "run", "--pool", "nemotron_usa", "--no-speech"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]

    from dagster import DagsterInstance, RunsFilter

    with DagsterInstance.from_config(str(Path(env["EYT_DATA_DIR"]) / "dagster_home")) as instance:
        runs = instance.get_runs(RunsFilter(job_name="eyt_reports"))
    assert len(runs) == 1 and runs[0].is_success, [(r.run_id, r.status) for r in runs]
    return runs[0].run_id


# The text of every box the asset graph draws (group titles and asset nodes), one per line.
GRAPH_TEXT = "[...document.querySelectorAll('svg foreignObject')].map(e => e.textContent).join('\\n')"


def test_dagster_ui_in_headless_chromium(tmp_path):
    if chromium_path() is None:  # a failure, not a skip: CI installs it
        pytest.fail(
            f"Chromium is not installed ({CHROMIUM}): `.ci/run` installs Debian's `chromium` "
            "(apt-get install -y --no-install-recommends chromium)"
        )
    started = time.monotonic()

    def phase(label: str) -> None:  # printed with -s, and shown with the output of a failure
        print(f"{time.monotonic() - started:6.1f} s  {label}", flush=True)

    env, log = small_slate_env(tmp_path), tmp_path / "dagster_dev.log"
    # The server starts while `eyt run` materialises (each takes 20-60 s on 2 cores): the UI reads the runs
    # from the instance as they are stored.
    with dagster_dev(env, log) as (server, base, port):
        reports_run = materialise(env)
        phase("eyt run")
        wait_until_loaded(server, base, log)
        phase("dagster dev loaded the code location")
        nodes = graphql(base, "{ assetNodes { assetKey { path } groupName } }")["assetNodes"]
        groups: dict[str, set[str]] = {}
        for node in nodes:
            groups.setdefault(node["groupName"], set()).add("/".join(node["assetKey"]["path"]))
        for key, group in NAMED.items():
            assert key in groups.get(group, set()), f"{key} is not in group {group}: {groups}"
        names = {key.split("/")[-1] for keys in groups.values() for key in keys}
        graphql(base, "mutation { setNuxSeen }")  # no 'Join the Dagster community' dialog over the pages

        with Chromium(tmp_path / "chromium", width=1600, height=1000) as browser:
            # 1. The global asset graph with every group expanded: group boxes and asset nodes are drawn (only
            #    those in view: the graph is larger than the window), each node one of the code location's.
            expanded = urllib.parse.quote(
                ",".join(
                    [f"global@global:{g}" for g in ALL_GROUPS] + [f"__repository__@eyt_dagster:{g}" for g in ALL_GROUPS]
                ),
                safe="",
            )
            browser.navigate(f"{base}/asset-groups?expanded={expanded}")

            def drawn(text: str | None) -> tuple[set[str], list[str]]:
                boxes = [b for b in (text or "").split("\n") if b]
                return (
                    {b for b in boxes if b in ALL_GROUPS},
                    [b.split("Latest event")[0] for b in boxes if b not in ALL_GROUPS],
                )

            text = browser.wait_until(
                GRAPH_TEXT,
                # which group boxes are in view depends on the graph's size; the selection below checks each group
                lambda t: len(drawn(t)[0]) >= 2 and len(drawn(t)[1]) >= 5,
                "two group boxes and five asset nodes in the graph",
            )
            unknown = [label for label in drawn(text)[1] if not any(node_matches(label, n) for n in names)]
            assert not unknown, f"the graph draws nodes that are no assets: {unknown}"
            time.sleep(1)  # let the layout settle before the picture
            shot = browser.screenshot(tmp_path / "asset_graph.png")
            phase("asset graph")

            # 2. The four named assets, selected with the graph's filter: each node in its group's box, with its
            #    live data loaded; the leaderboard's shows a materialisation.
            selection = urllib.parse.quote(" or ".join(f'key:"{key}"' for key in NAMED), safe="")
            browser.navigate(f"{base}/asset-groups~{selection}?expanded={expanded}")
            text = browser.wait_for_text(
                [key.split("/")[-1] + "Latest event" for key in NAMED] + ["Materialized"],
                absent=["Loading..."],
                expression=GRAPH_TEXT,
            )
            boxes = text.split("\n")
            assert set(GROUPS) <= set(boxes), f"group boxes missing from the selection: {boxes}"
            leaderboard = next(b for b in boxes if b.startswith("leaderboardLatest event"))
            assert "Materialized" in leaderboard, leaderboard
            turns = next(b for b in boxes if b.startswith("dialogue_turnsLatest event"))
            # the slate's cells only: both targets on its two pools (not the Chinese pool it does not play), one
            # pool of the two run
            assert "50% filled" in turns and "4 partitions" in turns, turns
            selection_shot = browser.screenshot(tmp_path / "asset_selection.png")
            phase("selected assets")

            # 3. Each group's catalog lists exactly the assets the code location puts in it.
            for group in ALL_GROUPS:
                expected = {f"/assets/{key}" for key in groups[group]}
                browser.set_viewport(1600, 400 + 64 * len(expected))  # the list draws only the rows in view
                browser.navigate(f"{base}/locations/eyt_dagster/asset-groups/{group}/list")
                browser.wait_for_text([key.replace("/", " / ") for key in sorted(groups[group])])
                hrefs = set(
                    browser.evaluate(
                        "[...document.querySelectorAll('a[href^=\"/assets/\"]')].map(a => a.getAttribute('href'))"
                    )
                )
                assert hrefs == expected, (
                    f"group {group}: the UI lists {sorted(hrefs)}, the code location {sorted(expected)}"
                )
            browser.set_viewport(1600, 1000)
            phase("group catalogs")

            # 4. The leaderboard's materialisation: in the eyt_reports run of the instance, with its metadata.
            browser.navigate(f"{base}/assets/dialogue/leaderboard?view=events")
            text = browser.wait_for_text(
                [
                    f"Materialized in run {reports_run[:8]}",
                    "dagster/row_count",
                    "preview",
                    "SELECT * FROM dialogue.leaderboard",
                    "embedded-baselines",
                ]
            )
            assert text.split("dagster/row_count", 1)[1].split()[0] == "2", "two targets x one pool"
            assert browser.evaluate(f"!!document.querySelector('a[href^=\"/runs/{reports_run}\"]')"), (
                f"no link to run {reports_run} on the leaderboard's events"
            )
            phase("leaderboard events")

    phase("stopped")
    # 5. Stopped cleanly: by SIGTERM, the port closed and no process of the server left.
    assert server.stopped_by == signal.SIGTERM, f"dagster dev needed {server.stopped_by!r}:\n{tail(log)}"
    assert not port_open(port), f"port {port} still answers after dagster dev stopped"
    assert server.killed == [], "processes of dagster dev outlived it by 10 s (then killed)"
    assert live_group_members(server.pid) == []

    for picture in (shot, selection_shot):  # real pictures of the graph, not a blank page
        width, height, colours = png_facts(picture)
        assert (width, height) == (1600, 1000) and picture.stat().st_size > 20_000 and colours > 50, (
            picture.name,
            width,
            height,
            picture.stat().st_size,
            colours,
        )
