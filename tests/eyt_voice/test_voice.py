"""The spoken EYT-Bench: voicing, the voiced loop with the embedded cascade, the text control, the gap."""

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from dagster import DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
from assets.eyt_voice.partitions import VOICE_TARGETS_PARTITION, voice_cell_key
from eyt_dagster.core.stats import paired_bootstrap_diff
from eyt_dagster.definitions import ASSETS
from eyt_dagster.eyt_bench.taxonomy import EMOTIONS
from eyt_dagster.eyt_voice.error_rates import word_errors
from eyt_dagster.eyt_voice.gap import voice_gap
from eyt_dagster.eyt_voice.settings import PACKAGED_ASR
from eyt_dagster.eyt_voice.voicing import EMOTION_VOICE, choose_voice, voice_instruction
from eyt_dagster.jobs import DIALOGUE_ASSETS, POOL_ASSETS, VOICE_ASSETS, VOICE_REPORT_ASSETS
from eyt_dagster.slate import SlateError, load_slate
from eyt_dagster.speech_eq.prosody import NEUTRAL, match_lexicon, prosody_for

from support.pipeline import resources_for
from support.slates import write_slate

POOL = "nemotron_usa"
TARGET = "reflective-baseline"

# -- voicing ----------------------------------------------------------------------------------------------


@pytest.mark.unit
def test_every_emotion_has_a_tone_whose_every_term_the_prosody_lexicon_knows():
    assert set(EMOTION_VOICE) == set(EMOTIONS)
    for emotion, instruction in EMOTION_VOICE.items():
        terms = [t.strip() for t in instruction.split(",")]
        matched = [m for m, _ in match_lexicon(instruction)]
        assert len(matched) == len(terms), (emotion, terms, matched)
    assert prosody_for(voice_instruction("neutral"))[0] == NEUTRAL
    assert (
        prosody_for(voice_instruction("sadness"))[0].rate
        < NEUTRAL.rate
        < prosody_for(voice_instruction("anger"))[0].rate
    )
    with pytest.raises(ValueError, match="no voice for emotion 'bored'"):
        voice_instruction("bored")


@pytest.mark.unit
def test_the_voice_comes_from_the_persona_when_it_says_enough_else_from_a_seeded_rule():
    older = choose_voice({"sex": "Female", "age_bucket": "60+"}, seed_id="s1", slate_seed=1)
    assert (older.gender, older.slot, older.source) == ("female", 3, "persona")
    assert choose_voice({"sex": "male"}, seed_id="s1", slate_seed=1).slot == 0
    seeded = [choose_voice({}, seed_id=f"s{i}", slate_seed=1) for i in range(40)]
    assert {v.source for v in seeded} == {"seeded"} and {v.gender for v in seeded} == {"female", "male"}
    assert seeded[0] == choose_voice({}, seed_id="s0", slate_seed=1)  # the same every time


@pytest.mark.unit
def test_word_errors_by_hand():
    assert word_errors("I feel so alone today", "i feel so alone today.") == 0
    assert word_errors("I feel so alone today", "I fell alone to day") == 4  # feel->fell, -so, today->to, +day
    assert word_errors("", "hello there") == 2 and word_errors("one two", "") == 2


@pytest.mark.unit
def test_gap_equals_a_recomputation_from_raw_rows():
    rows = []
    for mode, empathy in (("text", [80.0, 60.0, 70.0]), ("voice", [50.0, 60.0, np.nan])):
        for seed_id, value in zip(("a", "b", "c"), empathy):
            rows.append({"target": "t", "pool": "p", "seed_id": seed_id, "mode": mode, "empathy": value})
    df = pd.DataFrame(rows)
    for column in ("explicit_correct", "latent_correct", "emotion_correct", "n_turns", "drift", "satisfaction"):
        df[column] = 1.0
    df["completed"], df["persona"], df["anthropomorphic"] = True, 50.0, 50.0
    got = voice_gap(df, resamples=200, seed=3).set_index("metric").loc["empathy"]
    # c has no voice value: the pairs are a (50 - 80) and b (60 - 60)
    assert got["n_paired"] == 2 and got["text"] == 70.0 and got["voice"] == 55.0
    assert got["delta"] == pytest.approx(-15.0) and got["preserve_ratio"] == pytest.approx(55 / 70)
    expected = paired_bootstrap_diff([50.0, 60.0, np.nan], [80.0, 60.0, 70.0], resamples=200, seed=3)
    assert (got["ci_low"], got["ci_high"]) == (expected["low"], expected["high"])


@pytest.mark.unit
def test_a_text_baseline_hears_only_through_a_cascade(tmp_path):
    path = write_slate(
        tmp_path,
        targets=[
            {"id": "t", "provider": "embedded", "model": "reflective", "family": "f", "benchmarks": ["eyt_voice"]}
        ],
    )
    with pytest.raises(SlateError, match="speech_input: cascaded"):
        load_slate(path)


# -- end to end: the embedded cascade -----------------------------------------------------------------------


def _voice_slate(tmp_path: Path) -> Path:
    return write_slate(
        tmp_path,
        pools={POOL: {"source": "fixture"}},
        dialogues_per_pool=4,
        t_max=4,
        targets=[
            {
                "id": TARGET,
                "provider": "embedded",
                "model": "reflective",
                "family": "eyt-baseline-target",
                "benchmarks": ["eyt_bench", "eyt_voice"],
                "speech_input": "cascaded",
                "cascade": {"asr_model_path": PACKAGED_ASR, "cues": "emo_des"},
            }
        ],
        voice={"dialogues_per_pool": 2},
    )


def _run_voice(slate: Path, data: Path, instance: DagsterInstance) -> None:
    resources = resources_for(slate, data)
    materialize(
        ASSETS,
        selection=VOICE_ASSETS,
        partition_key=str(voice_cell_key(TARGET, POOL)),
        resources=resources,
        instance=instance,
    )
    materialize(ASSETS, selection=VOICE_REPORT_ASSETS, resources=resources, instance=instance)


@pytest.fixture(scope="module")
def voice_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("voice")
    slate = _voice_slate(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(TARGETS_PARTITION, [TARGET])
    instance.add_dynamic_partitions(VOICE_TARGETS_PARTITION, [TARGET])
    resources = resources_for(slate, data)
    materialize(ASSETS, selection=POOL_ASSETS, partition_key=POOL, resources=resources, instance=instance)
    materialize(
        ASSETS,
        selection=DIALOGUE_ASSETS,
        partition_key=str(target_pool_key(TARGET, POOL)),
        resources=resources,
        instance=instance,
    )
    _run_voice(slate, data, instance)
    return slate, data, instance


def _latest_metadata(instance: DagsterInstance, key: list[str]) -> dict:
    from dagster import AssetKey

    event = instance.get_latest_materialization_event(AssetKey(key))
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


@pytest.mark.materialisation
def test_every_user_turn_is_heard_as_a_clip_and_the_cascade_reads_its_transcript(voice_run):
    _, data, _ = voice_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    turns = con.execute("SELECT * FROM voice.voiced_turns WHERE turn > 0 ORDER BY seed_id, turn").df()
    con.close()
    assert turns["seed_id"].nunique() == 2 and len(turns) >= 4
    assert all((data / p).is_file() for p in turns["clip_path"])
    assert turns["clip_sha256"].str.len().eq(64).all() and (turns["clip_duration_s"] > 0.3).all()
    assert turns["asr_transcript"].str.len().gt(0).all() and turns["cues"].str.len().gt(0).all()
    # Whisper tiny hears espeak-ng's words well, but not perfectly: the errors are counted, never hidden
    assert turns["word_errors"].sum() < turns["ref_words"].sum() * 0.5
    first = turns[turns["turn"] == 1].iloc[0]
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    seed = con.execute("SELECT * FROM dialogue.chat_seeds WHERE seed_id = $s", {"s": first["seed_id"]}).df().iloc[0]
    con.close()
    assert first["instruction"] == voice_instruction(seed["initial_emotion"])
    assert first["user_text"] == seed["first_query"]


@pytest.mark.materialisation
def test_the_text_control_is_eyt_benchs_own_run_on_the_same_seeds(voice_run):
    _, data, _ = voice_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    control = con.execute("SELECT * EXCLUDE (created_at) FROM voice.text_turns ORDER BY seed_id, turn").df()
    seeds = list(control["seed_id"].unique())
    eyt = con.execute(
        "SELECT * EXCLUDE (created_at) FROM dialogue.dialogue_turns WHERE list_contains($s, seed_id) ORDER BY seed_id, turn",
        {"s": seeds},
    ).df()
    con.close()
    pd.testing.assert_frame_equal(control.reset_index(drop=True), eyt.reset_index(drop=True), check_dtype=False)


@pytest.mark.materialisation
def test_the_gap_table_equals_its_recomputation_from_the_scores(voice_run):
    slate, data, _ = voice_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    scores = con.execute("SELECT * FROM voice.dialogue_scores").df()
    table = con.execute("SELECT * FROM voice.voice_gap ORDER BY metric").df()
    errors = con.execute("SELECT * FROM voice.asr_errors").df()
    con.close()
    assert set(scores["mode"]) == {"voice", "text"}
    s = load_slate(slate)
    again = voice_gap(scores, resamples=s.bootstrap_resamples, seed=s.seed).sort_values("metric")
    for column in ("text", "voice", "delta", "ci_low", "ci_high", "preserve_ratio"):
        np.testing.assert_allclose(table[column].astype(float), again[column].astype(float), equal_nan=True)
    assert table["is_baseline"].all()
    assert len(errors) == 1 and 0 <= errors["wer"].iloc[0] < 0.5


@pytest.mark.materialisation
def test_a_rerun_synthesises_and_transcribes_nothing(voice_run):
    slate, data, instance = voice_run
    clips_before = sorted((data / "audio").rglob("*.wav"))
    _run_voice(slate, data, instance)
    meta = _latest_metadata(instance, ["voice", "voiced_turns"])
    assert meta["clips_synthesised"] == 0 and meta["clips_reused"] > 0
    # nothing recognised again either, though the step still tells how much audio its recognition read
    assert meta["tts_seconds"] == 0 and meta["asr_seconds"] > 0
    assert meta["clip_analyses"] and all(c["computed"] == 0 for c in meta["clip_analyses"].values())
    assert sorted((data / "audio").rglob("*.wav")) == clips_before


@pytest.mark.materialisation
def test_the_prosody_probe_hears_the_same_words_in_the_plain_voice(voice_run):
    _, data, _ = voice_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    probe = con.execute("SELECT * FROM voice.prosody_probe ORDER BY seed_id, turn").df()
    turns = con.execute("SELECT * FROM voice.voiced_turns WHERE turn > 0").df()
    effect = con.execute("SELECT * FROM voice.prosody_effect").df()
    con.close()
    toned = turns[turns["gold_emotion"] != "neutral"]
    assert len(probe) == len(toned) > 0 and probe["error"].isna().all()
    merged = probe.merge(turns, on=["seed_id", "turn"])
    # the same words, another clip (the plain voice), and the toned prediction is the dialogue's own
    assert (merged["plain_clip_sha256"] != merged["clip_sha256"]).all()
    assert (merged["pred_emotion_toned"] == merged["pred_emotion"]).all()
    row = effect.iloc[0]
    assert row["n_turns"] == len(probe)
    assert row["acc_toned"] == pytest.approx((probe["pred_emotion_toned"] == probe["gold_emotion"]).mean())
    assert row["acc_plain"] == pytest.approx((probe["pred_emotion_plain"] == probe["gold_emotion"]).mean())
    assert row["delta"] == pytest.approx(row["acc_toned"] - row["acc_plain"])


SQL = Path(__file__).resolve().parents[2] / "sql"
TWINS = {
    "voice_gap": (["target", "pool", "metric"], ["n_paired", "text", "voice", "delta", "preserve_ratio"]),
    "asr_errors": (
        ["target", "pool"],
        [
            *("turns", "ref_words", "word_errors", "wer", "cer", "turns_clean", "turns_misheard"),
            "emotion_acc_clean",
            *("emotion_acc_misheard", "explicit_intent_acc_clean", "explicit_intent_acc_misheard"),
        ],
    ),
    "prosody_effect": (["target", "pool"], ["n_turns", "acc_toned", "acc_plain", "delta"]),
}


@pytest.mark.materialisation
@pytest.mark.parametrize("twin", sorted(TWINS))
def test_sql_twins_equal_the_voice_tables(voice_run, twin):
    _, data, _ = voice_run
    keys, columns = TWINS[twin]
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    for name in ("per_dialogue", twin):
        con.execute((SQL / f"{name}.sql").read_text())
    asset = con.execute(f"SELECT * FROM voice.{twin}").df()
    from_sql = con.execute(f"SELECT * FROM {twin}_sql").df()
    con.close()
    assert len(asset) == len(from_sql) > 0
    merged = asset.merge(from_sql, on=keys, suffixes=("", "_sql"))
    assert len(merged) == len(asset)
    for column in columns:
        np.testing.assert_allclose(
            merged[column].astype(float),
            merged[f"{column}_sql"].astype(float),
            rtol=1e-9,
            equal_nan=True,
            err_msg=column,
        )


@pytest.mark.materialisation
def test_the_explorer_plays_each_user_clip_of_a_voiced_dialogue(voice_run):
    import hashlib
    import re

    from eyt_dagster.core.explorer_links import voice_dialogue_path, voice_path
    from eyt_dagster.explorer.app import create_app

    from support.asgi_get import get

    _, data, _ = voice_run
    app = create_app(data)
    board = get(app, voice_path())
    assert board.status == 200, board.text
    assert "The text-to-voice gap" in board.text and 'class="badge"' in board.text  # marked as a baseline
    cell = get(app, voice_path(target=TARGET, pool=POOL))
    seeds = re.findall(r'href="(/voice/dialogue/[^"?]+)"', cell.text)  # its numbers' links open their arithmetic
    assert len(seeds) == 2 and len(re.findall(r'href="/voice/dialogue/[^"]+\?explain=', cell.text)) == 2 * 4
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    seed_id = con.execute("SELECT min(seed_id) FROM voice.voiced_turns").fetchone()[0]
    clips = con.execute(
        "SELECT clip_path, clip_sha256 FROM voice.voiced_turns WHERE seed_id = $s AND turn > 0 ORDER BY turn",
        {"s": seed_id},
    ).fetchall()
    con.close()
    page = get(app, voice_dialogue_path(TARGET, seed_id))
    assert page.status == 200, page.text
    sources = re.findall(r'<audio controls preload="metadata" src="([^"]+)"', page.text)
    assert len(sources) == len(clips)
    for src, (path, sha) in zip(sources, clips):
        served = get(app, src)
        assert served.status == 200 and hashlib.sha256(served.body).hexdigest() == sha, path
    assert get(app, "/clip/../slate.yaml").status == 404  # only a clip a table names
    assert get(app, voice_dialogue_path(TARGET, "no-such-seed")).status == 404


@pytest.mark.materialisation
def test_the_report_has_the_gap_section_with_its_figures(voice_run):
    from eyt_dagster.ops.report_commands import report_html

    slate, data, _ = voice_run
    html = report_html(data / "eyt.duckdb", load_slate(slate), slate.read_text(), {}, generated_at="fixed")
    start = html.index("<h2>Spoken EYT-Bench: the text-to-voice gap</h2>")
    section = html[start : html.index("</section>", start)]
    assert section.count('<img src="data:image/png;base64,') == 2
    assert "emotion_acc" in section and "preserve_ratio" in section
    assert "Spoken EYT-Bench: speech recognition of the cascades" in html
    assert "Spoken EYT-Bench: does the tone change the perceived emotion?" in html


@pytest.mark.materialisation
def test_the_model_card_carries_the_voice_half(voice_run):
    from eyt_dagster.ops.report_commands import model_cards

    slate, data, _ = voice_run
    cards = model_cards(data / "eyt.duckdb", load_slate(slate)).set_index("target")
    card = cards.loc[TARGET]
    assert card["has_eyt_voice"] and card["has_eyt_bench"] and not card["has_speech_eq"]
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    gap = con.execute("SELECT * FROM voice.voice_gap").df().set_index("metric")
    con.close()
    # one pool: the card's pooled half is that pool's gap (the same pairs, resamples and seed)
    for metric in ("emotion_acc", "empathy", "ficr"):
        row = gap.loc[metric]
        assert card[f"voice_{metric}"] == pytest.approx(row["voice"])
        assert card[f"voice_{metric}_delta"] == pytest.approx(row["delta"])
        assert (card[f"voice_{metric}_ci_low"], card[f"voice_{metric}_ci_high"]) == pytest.approx(
            (row["ci_low"], row["ci_high"])
        )
    assert card["voice_n_paired"] == gap["n_paired"].max()


@pytest.mark.materialisation
def test_cost_by_role_counts_the_voice_roles_and_their_audio_seconds(voice_run):
    _, data, _ = voice_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    con.execute((SQL / "cost_by_role.sql").read_text())
    view = con.execute("SELECT * FROM cost_by_role_sql").df().set_index(["role", "model"])
    turns = con.execute("SELECT * FROM voice.voiced_turns WHERE turn > 0").df()
    con.close()
    clips = turns.drop_duplicates("clip_sha256")
    assert view.loc[("voice_target", TARGET), "rows"] == len(turns)
    tts = view.xs("tts", level="role")
    assert tts["audio_s"].sum() == pytest.approx(clips["clip_duration_s"].sum()) and tts["rows"].sum() == len(clips)
    # the cascade recognised each distinct clip once
    assert view.loc[("asr", TARGET), "audio_s"] == pytest.approx(clips["clip_duration_s"].sum())
    assert view["cost_usd"].sum() == 0  # embedded baselines and espeak-ng cost nothing


@pytest.mark.unit
def test_asr_errors_split_between_recognition_and_model_by_hand():
    from eyt_dagster.eyt_voice.gap import asr_errors

    rows = []
    for turn, (errors, emotion_right) in enumerate([(0, True), (0, False), (2, False), (1, True)], start=1):
        rows.append(
            {
                "target": "t",
                "pool": "p",
                "seed_id": "s",
                "turn": turn,
                "error": None,
                "complete": True,
                "word_errors": errors,
                "ref_words": 10,
                "gold_explicit_intent": "a",
                "pred_explicit_intent": "a",
                "gold_latent_intent": "b",
                "pred_latent_intent": "c",
                "gold_emotion": "joy",
                "pred_emotion": "joy" if emotion_right else "fear",
            }
        )
    got = asr_errors(pd.DataFrame(rows)).iloc[0]
    assert (got["turns"], got["word_errors"], got["wer"]) == (4, 3, 3 / 40)
    assert (got["turns_clean"], got["turns_misheard"]) == (2, 2)
    assert got["emotion_acc_clean"] == 0.5 and got["emotion_acc_misheard"] == 0.5
    assert got["explicit_intent_acc_clean"] == 1.0 and got["latent_intent_acc_misheard"] == 0.0
