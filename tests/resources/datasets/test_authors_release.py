"""The SpeechEQ items as the benchmark's authors publish them (tests/support/authors_shape.py: their layout, this
project's own text and clips): every folder imports, with the fields the authors add kept and the valence they leave out
inferred and said so; an import that yields nothing fails its run in one line; a subscale imported this way is
evaluated by the two SpeechEQ baselines end to end."""

import json

import duckdb
import pytest
from dagster import DagsterInstance, materialize

from assets.speech_eq.partitions import SPEECH_TARGETS_PARTITION
from eyt_dagster.definitions import ASSETS
from eyt_dagster.jobs import SEQ_REPORT_ASSETS, SPEECH_BUILD_ASSETS, SPEECH_EVAL_ASSETS, SPEECH_REPORT_ASSETS
from eyt_dagster.speech_eq.import_verdict import import_verdict
from eyt_dagster.speech_eq.valence_rules import infer_valence
from resources.datasets.speech_release import import_released

from support.authors_shape import BATCH, write_authors_release
from support.pipeline import resources_for
from support.slates import write_slate

SLUG = "interpersonal_empathy"
BASELINES = ["random-chooser-baseline", "acoustic-chooser-baseline"]


@pytest.mark.unit
def test_every_folder_in_the_authors_shape_imports_with_its_fields_kept(tmp_path):
    folders = write_authors_release(tmp_path / "release", SLUG, 5)
    report = import_released(tmp_path / "release")
    assert report.skipped == [] and len(report.items) == len(folders) == 5
    item = report.items[0]
    gm = item.generation_metadata
    # the valence is not published: inferred from the text (a lay-off and worry: Negative), and said so
    assert item.scenario.valence == "Negative" and gm["valence_source"].startswith("inferred by the embedded rules")
    assert item.scenario.target_social_intent == ""
    extra = gm["scenario_extra"]
    assert extra["speaker2_persona_high"] == "Steady and attentive" and extra["speaker1_voice"] == "voice_f1"
    assert gm["metadata_extra"] == {"id": item.dataset_id, "batch": BATCH}
    assert gm["published_audio_paths"]["04"] == f"data/{BATCH}/{SLUG}/{item.dataset_id}/audio/04.mp3"
    assert gm["context_eq_levels"] == {n: "high" for n in ("01", "02", "03", "06")}
    assert {item.scenario.valence for item in report.items} == {"Negative", "Positive"}  # the third scene is good news


@pytest.mark.unit
def test_valence_rules():
    assert infer_valence("They argue about the blame for the unfair decision")[0] == "Conflict"
    assert infer_valence("She got the new job and is thrilled")[0] == "Positive"
    assert infer_valence("He lost his father and is grieving")[0] == "Negative"
    valence, how = infer_valence("A quiet afternoon")
    assert valence == "Negative" and "(0 positive, 0 negative, 0 conflict cue(s))" in how


@pytest.mark.unit
def test_the_import_verdict_counts_reasons_and_fails_on_zero():
    skipped = [(f"/r/{SLUG}/x{i}", f"x{i}: scenario.title: missing") for i in range(45)]
    zero = import_verdict(SLUG, 0, skipped, 0.1)
    assert not zero.ok and "0 of 45 item folder(s) imported; 45 of 45 skipped: scenario.title missing" in zero.text
    partial = import_verdict(SLUG, 40, [*skipped[:4], (f"/r/{SLUG}/y", "y: metadata.json: does not parse")], 0.2)
    assert partial.ok and "4 of 45 skipped: scenario.title missing; 1 of 45 skipped: metadata.json does not parse" in (
        partial.text
    )
    assert not import_verdict(SLUG, 40, skipped[:5], 0.1).ok  # 5 of 45 is more than a tenth
    assert not import_verdict(SLUG, 0, [], 0.1).ok


@pytest.mark.materialisation
def test_an_import_with_no_item_fails_its_run_saying_why(tmp_path):
    for folder in write_authors_release(tmp_path / "release", SLUG, 3):
        metadata = json.loads((folder / "metadata.json").read_text())
        del metadata["scenario"]["title"]
        (folder / "metadata.json").write_text(json.dumps(metadata))
    data = tmp_path / "data"
    data.mkdir()
    slate = write_slate(tmp_path, speech={"source": "released", "released_path": str(tmp_path / "release")})
    result = materialize(
        ASSETS,
        selection=SPEECH_BUILD_ASSETS,
        partition_key=SLUG,
        resources=resources_for(slate, data),
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    text = failure.step_failure_data.user_failure_data.description
    assert text == f"{SLUG}: 0 of 3 item folder(s) imported; 3 of 3 skipped: scenario.title missing" + (
        " (at most 0.1 of the folders may be skipped: speech.max_skipped_fraction; an import with no item always fails)"
    )


SHORTCUTS = ["calmer-chooser-baseline", "livelier-chooser-baseline"]


@pytest.mark.materialisation
@pytest.mark.slow
def test_the_two_baselines_evaluate_a_subscale_imported_from_the_authors_shape(tmp_path):
    write_authors_release(tmp_path / "release", SLUG, 5)
    data = tmp_path / "data"
    data.mkdir()
    slate = write_slate(tmp_path, speech={"source": "released", "released_path": str(tmp_path / "release")})
    # the default slate's SpeechEQ baselines: the coin, the valence-matched rule and the two shortcut rules
    instance = DagsterInstance.ephemeral()
    resources = resources_for(slate, data)
    assert materialize(
        ASSETS, selection=SPEECH_BUILD_ASSETS, partition_key=SLUG, resources=resources, instance=instance
    ).success
    instance.add_dynamic_partitions(SPEECH_TARGETS_PARTITION, [*BASELINES, *SHORTCUTS])
    for target in [*BASELINES, *SHORTCUTS]:
        assert materialize(
            ASSETS, selection=SPEECH_EVAL_ASSETS, partition_key=target, resources=resources, instance=instance
        ).success
    assert materialize(ASSETS, selection=SPEECH_REPORT_ASSETS, resources=resources, instance=instance).success
    seq = materialize(ASSETS, selection=SEQ_REPORT_ASSETS, resources=resources, instance=instance)
    assert seq.success
    [board_meta] = [m.metadata for m in seq.asset_materializations_for_node("speech__seq_leaderboard")]
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        summary = con.execute(
            "SELECT subscale, source, scenarios, items, pairs_discarded, pairs_below_threshold, discarded, "
            "mean_total_passed FROM speech.speech_build_report"
        ).fetchall()
        pairs = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE NOT passed) FROM speech.contrast_scores"
        ).fetchone()
        items = con.execute("SELECT count(*), count(DISTINCT valence) FROM speech.eq_items").fetchone()
        sources = con.execute(
            "SELECT DISTINCT json_extract_string(generation_metadata_json, '$.valence_source') IS NOT NULL "
            "FROM speech.eq_items"
        ).fetchall()
        choices = con.execute(
            "SELECT target, count(*), count(*) FILTER (WHERE error IS NULL) FROM speech.slm_choices GROUP BY 1 "
            "ORDER BY 1"
        ).fetchall()
        round1 = dict(
            con.execute(
                "SELECT target, avg(correct::INT) FROM speech.slm_choices WHERE round = 1 GROUP BY 1"
            ).fetchall()
        )
    assert items == (5, 2) and sources == [(True,)]
    # the build summary shows the imported subscale: its source, its items, and the published pairs the filter
    # would have rejected (scored, never dropped)
    [(slug, source, scenarios, count, discarded_pairs, below, discarded, mean)] = summary
    assert (slug, source, scenarios, count, discarded_pairs, discarded) == (
        SLUG,
        f"imported from {tmp_path / 'release'}",
        0,
        5,
        0,
        0,
    )
    assert pairs[0] == 10 and below == pairs[1] and (mean is not None or below == 10)
    assert [c[0] for c in choices] == sorted([*BASELINES, *SHORTCUTS])
    assert all(n > 0 and ok == n for _, n, ok in choices)
    # in 4 of these 5 items the resonant reply is the calmer voice: "always calmer" is right 4 times in 5 without
    # reading the scene, "always livelier" once; the two rules are mirror images of each other
    assert round1["calmer-chooser-baseline"] == pytest.approx(0.8)
    assert round1["livelier-chooser-baseline"] == pytest.approx(0.2)
    # the SEQ leaderboard calls the shortcut out: "always calmer" beats chance by 0.3 without judging the scene
    shortcuts = board_meta["shortcuts"].value
    assert "calmer-chooser-baseline (default): Acc1 0.80 against chance 0.50" in shortcuts
    assert "livelier-chooser-baseline" not in shortcuts and "random-chooser-baseline" not in shortcuts
    from eyt_dagster.reporting.speech_sections import speech_sections

    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        board = con.execute("SELECT * FROM speech.seq_leaderboard").df()
    [leaderboard_section] = speech_sections({"speech.seq_leaderboard": board})[:1]
    assert "Shortcut (a rule, not a model, beats chance by a wide margin)" in leaderboard_section.note
    # the explorer's build page shows where the items came from
    from eyt_dagster.explorer.app import create_app

    from support.asgi_get import get

    page = get(create_app(data), "/speech/build")
    assert page.status == 200 and f"imported from {tmp_path / 'release'}" in page.text


@pytest.mark.unit
def test_contrast_thresholds_per_engine_score_the_published_pairs(tmp_path):
    """speech.contrast_by_engine.imported scores the published pairs with thresholds of their own: every item is
    still imported (published pairs are never dropped); only how many reach the pass score changes."""
    from eyt_dagster.slate import load_slate
    from eyt_dagster.speech_eq.audio_tables import imported_subscale
    from eyt_dagster.speech_eq.contrast import ContrastThresholds
    from resources.audio.audio_features import clip_features

    write_authors_release(tmp_path / "release", SLUG, 3)
    report = import_released(tmp_path / "release")
    unreachable = ContrastThresholds(pass_score=8, mfcc_l2=1e6, rms_db=1e3)
    slate = write_slate(
        tmp_path,
        speech={
            "source": "released",
            "released_path": str(tmp_path / "release"),
            "contrast_by_engine": {"imported": unreachable.model_dump()},
        },
    )
    settings = load_slate(slate).speech
    assert (
        settings.thresholds_for("imported") == unreachable and settings.thresholds_for("espeak-ng") == settings.contrast
    )
    by_default = imported_subscale(report.items, [], SLUG, features=clip_features, thresholds=settings.contrast)
    strict = imported_subscale(
        report.items, [], SLUG, features=clip_features, thresholds=settings.thresholds_for("imported")
    )
    assert len(by_default.items) == len(strict.items) == 3
    assert sum(c["passed"] for c in by_default.contrasts) > 0 and sum(c["passed"] for c in strict.contrasts) == 0
