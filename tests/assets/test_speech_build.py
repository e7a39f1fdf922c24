"""The SpeechEQ builder materialised in process for two subscales on the embedded defaults (template text,
espeak-ng speech, librosa features), checked with SQL."""

from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance, materialize

from eyt_dagster.definitions import ASSETS
from eyt_dagster.jobs import SPEECH_BUILD_ASSETS, SPEECH_REPORT_ASSETS
from resources.storage.data_paths import resolve_path_columns

from support.pipeline import resources_for
from support.slates import write_slate

SUBSCALES = ("interpersonal_empathy", "stress_management_optimism")


@pytest.fixture(scope="module")
def speech_warehouse(tmp_path_factory):
    directory = tmp_path_factory.mktemp("speech")
    slate = write_slate(directory)
    instance = DagsterInstance.ephemeral()
    for slug in SUBSCALES:
        result = materialize(
            ASSETS,
            selection=SPEECH_BUILD_ASSETS,
            partition_key=slug,
            resources=resources_for(slate, directory),
            instance=instance,
        )
        assert result.success
    report = materialize(
        ASSETS, selection=SPEECH_REPORT_ASSETS, resources=resources_for(slate, directory), instance=instance
    )
    assert report.success
    con = duckdb.connect(str(directory / "eyt.duckdb"), read_only=True)
    yield con
    con.close()


def data_dir_of(con) -> Path:
    return Path(
        con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    ).parent


def q(con, sql):
    return con.execute(sql).fetchall()


@pytest.mark.materialisation
def test_every_stage_has_rows_for_both_subscales(speech_warehouse):
    con = speech_warehouse
    for table in ("scenarios", "dialogues", "tone_instructions", "tone_selection", "tts_clips", "contrast_scores"):
        assert {s for (s,) in q(con, f"SELECT DISTINCT subscale FROM speech.{table}")} == set(SUBSCALES), table
    assert q(con, "SELECT count(*) FROM speech.scenarios") == [(6,)]  # 3 valences x 1 item x 2 subscales
    assert q(con, "SELECT DISTINCT count(*) FROM speech.dialogues GROUP BY scenario_id") == [(6,)]


@pytest.mark.materialisation
def test_contrast_rows_add_up_and_regeneration_follows_the_rule(speech_warehouse):
    con = speech_warehouse
    points = "points_pitch + points_rate + points_centroid + points_rms + points_mfcc + points_duration"
    assert q(con, f"SELECT count(*) FROM speech.contrast_scores WHERE total <> {points}") == [(0,)]
    assert q(con, "SELECT count(*) FROM speech.contrast_scores WHERE passed <> (total >= 4)") == [(0,)]
    # a pair is regenerated only after a failure, with a stronger rendering, at most three times
    attempts = con.execute("""SELECT scenario_id, turn, list(passed ORDER BY attempt) AS passed,
                                     list(strength ORDER BY attempt) AS strength
                              FROM speech.contrast_scores GROUP BY ALL""").df()
    for row in attempts.itertuples():
        assert len(row.passed) <= 4 and not any(row.passed[:-1])
        assert list(row.strength) == sorted(row.strength)


@pytest.mark.materialisation
def test_items_passed_on_both_test_turns_and_their_clips_exist(speech_warehouse):
    con = speech_warehouse
    stored = con.execute("SELECT * FROM speech.eq_items").df()
    assert len(stored) >= 2  # at least one item per subscale on the embedded defaults
    assert (stored["turn4_contrast"] >= 4).all() and (stored["turn6_contrast"] >= 4).all()
    paths = [c for c in stored.columns if c.endswith("_path")]
    assert len(paths) == 8
    # stored relative to the data directory (audio/<xx>/<sha256>.wav), so the directory can move
    assert all(p.startswith("audio/") for column in paths for p in stored[column]), stored[paths].iloc[0]
    items = resolve_path_columns(stored, data_dir_of(con))
    for column in paths:
        assert all(Path(p).is_file() and Path(p).stat().st_size > 1000 for p in items[column]), column
    assert (items["turn4_resonant_path"] != items["turn4_dissonant_path"]).all()
    # an item whose pair never reached the pass score is not an item, but its attempts are kept
    discarded = q(
        con,
        """SELECT count(DISTINCT scenario_id) FROM speech.contrast_scores
                          WHERE scenario_id NOT IN (SELECT dataset_id FROM speech.eq_items)""",
    )[0][0]
    assert discarded + len(items) == 6


@pytest.mark.cli
def test_build_report_and_export_round_trip(speech_warehouse, tmp_path):
    import os
    import subprocess
    import sys

    from eyt_dagster.speech_eq.build_summary import build_summary
    from resources.datasets.speech_release import import_released

    con = speech_warehouse
    tables = {
        t: con.execute(f"SELECT * FROM speech.{t}").df()
        for t in ("scenarios", "tone_instructions", "contrast_scores", "eq_items")
    }
    summary = build_summary(*tables.values()).set_index("subscale")
    stored = con.execute("SELECT * FROM speech.speech_build_report ORDER BY subscale").df().set_index("subscale")
    assert (stored["items"] == summary["items"]).all() and (
        stored["pairs_discarded"] == summary["pairs_discarded"]
    ).all()
    assert list(summary.index) == sorted(SUBSCALES)
    assert (summary["items"] + summary["discarded"] == summary["scenarios"]).all()
    assert summary["items"].sum() == len(tables["eq_items"])

    data_dir = data_dir_of(con)
    tables["eq_items"] = resolve_path_columns(tables["eq_items"], data_dir)
    result = subprocess.run(
        [Path(sys.executable).parent / "eyt", "speech-export"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "EYT_DATA_DIR": str(data_dir)},
    )
    assert result.returncode == 0, result.stderr[-1500:]
    # by default under the data directory, and the command says where; nothing in the folder it was started from
    out = (Path(data_dir) / "speecheq_items").resolve()
    assert f"item folder(s) under {out}" in result.stdout and list(tmp_path.iterdir()) == []
    report = import_released(out)
    assert report.skipped == [] and len(report.items) == len(tables["eq_items"])
    by_id = {item.dataset_id: item for item in report.items}
    for row in tables["eq_items"].itertuples():
        item = by_id[row.dataset_id]
        assert item.clip(4, "high").tone_description == row.turn4_resonant_tone  # 04 = resonant, as released
        assert Path(item.clip(6, "low").path).read_bytes() == Path(row.turn6_dissonant_path).read_bytes()


@pytest.mark.materialisation
def test_released_source_imports_items_and_skips_a_broken_folder(speech_warehouse, tmp_path):
    import shutil

    from eyt_dagster.speech_eq.release_format import item_from_rows
    from resources.datasets.speech_release import write_released

    con = speech_warehouse
    slug = "interpersonal_empathy"
    built = resolve_path_columns(
        con.execute(f"SELECT * FROM speech.eq_items WHERE subscale = '{slug}'").df(), data_dir_of(con)
    )
    released = tmp_path / "released"
    folders = write_released([item_from_rows(r) for r in built.to_dict("records")], released)
    broken = folders[0].parent / "broken-copy"
    shutil.copytree(folders[0], broken)
    (broken / "metadata.json").write_text("{ not json")

    data = tmp_path / "data"
    data.mkdir()
    # one broken folder of a handful: more than the default tenth, allowed here
    slate = write_slate(
        tmp_path, speech={"source": "released", "released_path": str(released), "max_skipped_fraction": 0.5}
    )
    result = materialize(
        ASSETS,
        selection=SPEECH_BUILD_ASSETS,
        partition_key=slug,
        resources=resources_for(slate, data),
        instance=DagsterInstance.ephemeral(),
    )
    assert result.success
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as imported:
        items = imported.execute("SELECT * FROM speech.eq_items").df()
        assert sorted(items["dataset_id"]) == sorted(built["dataset_id"])  # the broken copy was skipped
        assert imported.execute("SELECT count(*) FROM speech.scenarios").fetchone() == (0,)
        assert imported.execute("SELECT DISTINCT engine FROM speech.tts_clips").fetchall() == [("imported",)]
        # the skipped folder is a row of speech.import_skips, with its reason (the build summary counts them)
        [(folder, reason)] = imported.execute("SELECT folder, reason FROM speech.import_skips").fetchall()
        assert folder.endswith("broken-copy") and reason.startswith("metadata.json does not parse")
        # the published pairs are scored with the same filter: our own items pass it again
        assert imported.execute("SELECT count(*), bool_and(passed) FROM speech.contrast_scores").fetchone() == (
            2 * len(built),
            True,
        )
    meta = result.asset_materializations_for_node("speech_audio")
    skipped = [m.metadata["skipped_folders"].value for m in meta if "skipped_folders" in m.metadata]
    assert skipped == [1]
    # a partial import is a notice, a line of the run's summary (eyt_dagster/ops/launch.py), with the reason counted
    from eyt_dagster.ops.launch import notices

    [(asset, text)] = notices(result.all_events)
    folders = len(built) + 1
    assert asset == "speech/eq_items" and text.startswith(
        f"{slug}: {len(built)} of {folders} item folder(s) imported; 1 of {folders} skipped: metadata.json does not "
        "parse ("  # the parser's own message follows
    )


@pytest.mark.unit
def test_the_build_summary_of_nothing_built_has_its_columns_and_no_row():
    """The unified reports run before any SpeechEQ subscale was built: an empty summary, not a KeyError."""
    import pandas as pd

    from eyt_dagster.speech_eq.build_summary import build_summary

    empty = pd.DataFrame(columns=["subscale", "scenario_id", "generator"])
    out = build_summary(empty, pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    assert len(out) == 0 and {"items", "discarded", "scenarios"} <= set(out.columns)
    assert int(out["items"].sum()) == 0 and int(out["discarded"].sum()) == 0
