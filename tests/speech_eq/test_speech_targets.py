"""The text-reading SpeechEQ target kinds through the real openai client against a localhost server: the
cascade (reference transcripts + acoustic emotion cues, emo_num and emo_des) and the oracle text check
(transcripts + tone instructions). What the model reads is checked in the requests the server received."""

import json
import re
from pathlib import Path

import pytest

from eyt_dagster.speech_eq.choice import system_prompt
from eyt_dagster.speech_eq.evaluation import evaluate_items
from resources.audio.clip_analysis import ClipAnalysisStore
from resources.models.model_access import ModelAccess, SlateAccess
from resources.roles.eyt_roles import EytRoles
from resources.roles.speech_roles import SpeechRoles

from support.localhost_server import chat_completion, error_response, serve
from support.slates import remote, write_slate
from support.speech_items import make_item

# a text-reading SpeechEQ target behind the localhost server
TEXT_LLM = {"model": "text-llm", "family": "stub", "benchmarks": ["speech_eq"]}


def paper_reply(option: int) -> str:
    return json.dumps(
        {
            "acoustic_profile_1": "slow and low",
            "acoustic_profile_2": "fast and loud",
            "situational_demand": "a calm voice",
            "reasoning": "option 1 fits",
            "selected_option": option,
        }
    )


@pytest.fixture
def answered(tmp_path):
    item = make_item(tmp_path / "clips")
    requests = []

    def handler(body):
        requests.append(body)
        return chat_completion(paper_reply(1))

    with serve(handler) as server:
        slate = write_slate(
            tmp_path,
            targets=[
                {
                    "id": "reflective-baseline",
                    "provider": "embedded",
                    "model": "reflective",
                    "family": "eyt-baseline-target",
                },
                remote(
                    "cascade-num", server.base_url, **TEXT_LLM, speech_input="cascaded", cascade={"cues": "emo_num"}
                ),
                remote(
                    "cascade-des", server.base_url, **TEXT_LLM, speech_input="cascaded", cascade={"cues": "emo_des"}
                ),
                remote("oracle", server.base_url, **TEXT_LLM, speech_input="oracle_text"),
            ],
        )
        slate_access, models = SlateAccess(slate_path=str(slate)), ModelAccess(data_dir=str(tmp_path / "data"))
        rows = {}
        for target in ("cascade-num", "cascade-des", "oracle"):
            before = len(requests)
            rows[target] = evaluate_items(
                [item],
                SpeechRoles(slate_access.slate, models).speech_target(target),
                conditions={"default": system_prompt("default")},
                seed=7,
                both_orders=False,
                inference=["sequential"],
            )
            rows[target + ":requests"] = requests[before:]
    return item, rows


def first_user_text(body) -> str:
    content = body["messages"][1]["content"]
    assert isinstance(content, str)  # text-only targets get plain text, no audio parts
    return content


@pytest.mark.unit
def test_cascade_reads_transcripts_with_numeric_or_descriptive_cues(answered):
    item, rows = answered
    numeric = first_user_text(rows["cascade-num:requests"][0])
    assert item.conversation[0].text in numeric and "[voice: pitch" in numeric and " Hz" in numeric and "dB" in numeric
    words = first_user_text(rows["cascade-des:requests"][0])
    assert (
        "[voice:" in words
        and " Hz" not in words
        and any(w in words for w in ("pitch", "quiet", "loud", "slow", "fast"))
    )
    assert "input_audio" not in json.dumps(rows["cascade-num:requests"][0])


@pytest.mark.unit
def test_oracle_reads_the_tone_instructions_and_is_scored(answered):
    _item, rows = answered
    text = first_user_text(rows["oracle:requests"][0])
    assert "[spoken: slow, low and warm]" in text and "[spoken: loud, fast and chirpy]" in text
    assert [r["round"] for r in rows["oracle"]] == [1, 2]
    assert all(r["correct"] == (r["correct_option"] == 1) for r in rows["oracle"])
    assert all(r["calls"] == 1 and r["tokens"] > 0 for r in rows["oracle"])


@pytest.mark.unit
def test_a_speech_only_target_cannot_run_eyt_and_vice_versa(answered, tmp_path):
    slate = write_slate(tmp_path)
    slate_access, models = SlateAccess(slate_path=str(slate)), ModelAccess(data_dir=str(tmp_path / "data"))
    with pytest.raises(ValueError, match="does not run speech_eq"):
        SpeechRoles(slate_access.slate, models).speech_target("reflective-baseline")
    with pytest.raises(ValueError, match="does not run eyt_bench"):
        EytRoles(slate_access.slate, models).target("random-chooser-baseline")


@pytest.mark.materialisation
def test_cascade_with_a_dimensional_regression_model_end_to_end(tmp_path, localhost_server):
    """A cascade whose cues come from a (tiny, random) wav2vec2 regression model: the slm_choices asset runs it
    through the real openai client, the model reads each clip's valence / arousal / dominance in its prompt,
    and every row records the cue source."""
    import pandas as pd
    from dagster import DagsterInstance, build_asset_context

    from assets.speech_eq.partitions import SPEECH_TARGETS_PARTITION
    from assets.speech_eq.slm_choices import slm_choices
    from eyt_dagster.speech_eq.cues import cues_from_dimensions
    from eyt_dagster.speech_eq.release_format import item_rows
    from resources.audio.emotion_regression import DimensionalEmotionModel

    from support.tiny_emotion_models import save_tiny_regression

    item = make_item(tmp_path / "clips")
    model_dir = save_tiny_regression(tmp_path / "tiny-vad", {0: "dominance", 1: "valence", 2: "arousal"})
    vad = DimensionalEmotionModel(str(model_dir))
    clip = {c.file_number: c for c in item.clips}
    requests = []

    def handler(body):
        requests.append(body)
        return chat_completion(paper_reply(2))

    instance = DagsterInstance.ephemeral()
    server = localhost_server(handler)
    cascade = {"emotion_model_path": str(model_dir)}
    slate = write_slate(
        tmp_path,
        targets=[
            {
                "id": "reflective-baseline",
                "provider": "embedded",
                "model": "reflective",
                "family": "eyt-baseline-target",
            },
            remote(
                "vad-num", server.base_url, **TEXT_LLM, speech_input="cascaded", cascade={**cascade, "cues": "emo_num"}
            ),
            remote(
                "vad-des", server.base_url, **TEXT_LLM, speech_input="cascaded", cascade={**cascade, "cues": "emo_des"}
            ),
        ],
    )
    slate_access, models = SlateAccess(slate_path=str(slate)), ModelAccess(data_dir=str(tmp_path / "data"))
    instance.add_dynamic_partitions(SPEECH_TARGETS_PARTITION, ["vad-num", "vad-des"])
    frames = {}
    for target in ("vad-num", "vad-des"):
        before = len(requests)
        context = build_asset_context(partition_key=target, instance=instance)
        out = slm_choices(context, slate=slate_access, models=models, eq_items=pd.DataFrame([item_rows(item)]))
        frames[target], frames[target + ":requests"] = out.value, requests[before:]
        frames[target + ":analysed"] = out.metadata["clip_analyses_computed"].value
    # the model's outputs do not depend on the target: the first computes each of the 8 clips, the second none
    assert [frames[t + ":analysed"] for t in ("vad-num", "vad-des")] == [8, 0]
    for target, kind in (("vad-num", "emo_num"), ("vad-des", "emo_des")):
        rows, sent = frames[target], frames[target + ":requests"]
        assert len(rows) > 0 and set(rows["cue_source"]) == {"regression:tiny-vad"}
        assert set(rows["speech_input"]) == {f"cascaded-{kind}"} and rows["error"].isna().all()
        first = first_user_text(sent[0])
        for number in ("01", "02", "03"):  # the context turns, each with its own clip's cues
            cue = cues_from_dimensions(vad.values(clip[number].path), kind)
            assert f'"{clip[number].text}" [voice: {cue}]' in first
    numeric = re.findall(r"\[voice: ([^\]]*)\]", first_user_text(frames["vad-num:requests"][0]))
    words = re.findall(r"\[voice: ([^\]]*)\]", first_user_text(frames["vad-des:requests"][0]))
    assert len(numeric) == len(words) >= 5  # three context turns and the two candidates
    assert all(
        re.fullmatch(r"valence -?\d\.\d\d, arousal -?\d\.\d\d, dominance -?\d\.\d\d \(each 0-1, low to high\)", c)
        for c in numeric
    )
    assert all(" arousal" in c and not re.search(r"\d", c) for c in words)  # words only, no numbers


# -- per-clip analyses: computed once, shared by every cascade and rerun --------------------------------------

BASELINE_TARGET = {
    "id": "reflective-baseline",
    "provider": "embedded",
    "model": "reflective",
    "family": "eyt-baseline-target",
}


def choices_step(slate_access, models, instance, target, items):
    """The slm_choices asset of one target on these items, as a run materialises it: (rows, metadata)."""
    import pandas as pd
    from dagster import build_asset_context

    from assets.speech_eq.slm_choices import slm_choices
    from eyt_dagster.speech_eq.release_format import item_rows

    context = build_asset_context(partition_key=target, instance=instance)
    out = slm_choices(context, slate=slate_access, models=models, eq_items=pd.DataFrame([item_rows(i) for i in items]))
    return out.value, {k: getattr(v, "value", v) for k, v in out.metadata.items()}


@pytest.mark.materialisation
def test_cascades_compute_each_clip_analysis_once_for_every_target_and_rerun(tmp_path, localhost_server):
    """Two cascades with acoustic cues (numbers, words) through the slm_choices asset: the first computes the
    voice measures of each of the item's 8 clips, the second and a rerun (a new resource on the same data
    directory, as a new process has) compute none. The prompts carry exactly the cues computed from each clip
    directly, and the rerun sends byte-identical prompts: every round is served from the call cache."""
    from dagster import DagsterInstance

    from assets.speech_eq.partitions import SPEECH_TARGETS_PARTITION
    from eyt_dagster.speech_eq.cues import emo_des, emo_num
    from resources.audio.voice_measures import VOICE_MEASURES, voice_measures

    item = make_item(tmp_path / "clips")
    requests = []

    def handler(body):
        requests.append(body)
        return chat_completion(paper_reply(1))

    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SPEECH_TARGETS_PARTITION, ["casc-num", "casc-des"])
    server = localhost_server(handler)
    slate = write_slate(
        tmp_path,
        targets=[
            BASELINE_TARGET,
            remote("casc-num", server.base_url, **TEXT_LLM, speech_input="cascaded", cascade={"cues": "emo_num"}),
            remote("casc-des", server.base_url, **TEXT_LLM, speech_input="cascaded", cascade={"cues": "emo_des"}),
        ],
    )

    def resource():
        return SlateAccess(slate_path=str(slate)), ModelAccess(data_dir=str(tmp_path / "data"))

    slate_access, models = resource()
    steps = {}
    for target in ("casc-num", "casc-des"):
        before = len(requests)
        steps[target] = (*choices_step(slate_access, models, instance, target, [item]), requests[before:])
    before = len(requests)
    rerun_rows, rerun_meta = choices_step(*resource(), instance, "casc-num", [item])
    assert len(requests) == before  # the same prompts: all answered from the call cache
    folder = VOICE_MEASURES.folder
    rows, meta, sent = steps["casc-num"]
    assert (meta["clip_analyses_computed"], meta["clip_analyses_reused"]) == (8, 0)
    assert meta["clip_analyses"] == {folder: {"computed": 8, "reused": 0}}
    assert (steps["casc-des"][1]["clip_analyses_computed"], steps["casc-des"][1]["clip_analyses_reused"]) == (0, 8)
    assert (rerun_meta["clip_analyses_computed"], rerun_meta["clip_analyses_reused"]) == (0, 8)
    stored = list((tmp_path / "data" / "cache" / "clip_analysis" / folder).glob("*/*.json"))
    assert len(stored) == 8  # one result per clip, whichever target asked first
    # every clip of the first prompt reads as its directly computed measures would render
    clip = {c.file_number: c for c in item.clips}
    gender = {1: item.scenario.speaker1.gender, 2: item.scenario.speaker2.gender}
    for number in ("01", "02", "03"):
        measures = voice_measures(clip[number].path)
        assert f'"{clip[number].text}" [voice: {emo_num(measures)}]' in first_user_text(sent[0])
        words = emo_des(measures, gender[clip[number].speaker])
        assert f'"{clip[number].text}" [voice: {words}]' in first_user_text(steps["casc-des"][2][0])
    assert rows["error"].isna().all() and len(rows) == len(rerun_rows) == 8
    choice = ["item_id", "inference", "order", "round", "selected_option", "correct", "reasoning", "tokens"]
    assert rows[choice].equals(rerun_rows[choice]) and (rerun_rows["calls"] == 0).all()


@pytest.mark.materialisation
def test_an_unreadable_clip_fails_its_item_only_and_is_never_stored(tmp_path, localhost_server):
    """A cascade over two items, one of whose context clips is not audio: that item's rounds are error rows
    naming the clip (no verdict), the other item is answered, and no analysis of the bad clip is stored, so a
    rerun tries it again."""
    import hashlib

    from dagster import DagsterInstance

    from assets.speech_eq.partitions import SPEECH_TARGETS_PARTITION
    from resources.audio.voice_measures import VOICE_MEASURES

    good, bad = make_item(tmp_path / "clips"), make_item(tmp_path / "clips", dataset_id="item-2")
    broken = next(c for c in bad.clips if c.file_number == "02")
    Path(broken.path).write_bytes(b"RIFF, but not audio at all")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SPEECH_TARGETS_PARTITION, ["casc"])
    server = localhost_server(lambda body: chat_completion(paper_reply(1)))
    slate = write_slate(
        tmp_path,
        targets=[
            BASELINE_TARGET,
            remote("casc", server.base_url, **TEXT_LLM, speech_input="cascaded", max_concurrency=4),
        ],
    )
    slate_access, models = SlateAccess(slate_path=str(slate)), ModelAccess(data_dir=str(tmp_path / "data"))
    rows, meta = choices_step(slate_access, models, instance, "casc", [good, bad])
    failed, answered = rows[rows["item_id"] == "item-2"], rows[rows["item_id"] == "item-1"]
    assert len(failed) > 0 and failed["error"].notna().all() and failed["correct"].isna().all()
    assert failed["error"].str.contains(f"voice measures: {broken.path}: cannot read audio", regex=False).all()
    assert set(failed["round"]) == {1}  # round 2 is not asked after a round 1 that never reached the model
    assert answered["error"].isna().all() and len(answered) == 8 and meta["error_rows"] == len(failed)
    bad_sha = hashlib.sha256(Path(broken.path).read_bytes()).hexdigest()
    assert not ClipAnalysisStore(models.data_dir).result_path(VOICE_MEASURES, bad_sha).exists()
    # item-2's readable clips are item-1's tones, byte for byte: content-addressed, they are the same 8 clips
    assert (meta["clip_analyses_computed"], meta["clip_analyses_reused"]) == (8, 0)


# -- a reply that never parses, also when the re-ask fails --------------------------------------------------

REASK_MARK = "Your reply was rejected"
CONTEXT_FULL = "This model's maximum context length is 4096 tokens; your messages resulted in 5120 tokens."


def run_scripted(tmp_path, first_round1, reask):
    """One item through an oracle target behind the stub server: round 1's first reply is `first_round1`, a
    re-ask gets `reask`, round 2 gets valid JSON. Returns the rows and the leaderboard row."""
    import pandas as pd

    from eyt_dagster.speech_eq.seq_tables import seq_leaderboard
    from eyt_dagster.speech_eq.table_contracts import coerce_slm_choices

    item = make_item(tmp_path / "clips")
    seen = []

    def handler(body):
        seen.append(body)
        if REASK_MARK in json.dumps(body["messages"]):
            return reask
        return first_round1 if len(body["messages"]) == 2 else chat_completion(paper_reply(1))

    with serve(handler) as server:
        slate = write_slate(
            tmp_path,
            targets=[
                {
                    "id": "reflective-baseline",
                    "provider": "embedded",
                    "model": "reflective",
                    "family": "eyt-baseline-target",
                },
                remote(
                    "oracle", server.base_url, **TEXT_LLM, speech_input="oracle_text", parse_retries=1, max_retries=0
                ),
            ],
        )
        slate_access, models = SlateAccess(slate_path=str(slate)), ModelAccess(data_dir=str(tmp_path / "data"))
        rows = evaluate_items(
            [item],
            SpeechRoles(slate_access.slate, models).speech_target("oracle"),
            conditions={"default": system_prompt("default")},
            seed=7,
            both_orders=False,
            inference=["sequential"],
        )
    df = coerce_slm_choices(
        pd.DataFrame(rows).assign(target="oracle", is_baseline=False, speech_input="audio", model="text-llm", seed=7)
    )
    board = seq_leaderboard(df, resamples=20, seed=0).set_index("target").loc["oracle"]
    return rows, board, seen


@pytest.mark.unit
def test_a_reask_refused_with_400_is_a_parse_failure_and_wrong(tmp_path):
    rows, board, seen = run_scripted(
        tmp_path,
        chat_completion("The second voice sounds kinder to me."),
        error_response(400, CONTEXT_FULL, code="context_length_exceeded"),
    )
    assert sum(REASK_MARK in json.dumps(b["messages"]) for b in seen) == 1  # the re-ask reached the server
    first = rows[0]
    assert (first["round"], first["parse_failed"], first["correct"], first["error"]) == (1, True, False, None)
    assert "HTTP 400" in first["reasoning"] and first["selected_option"] is None
    # scored: one item, round 1 wrong; two calls made, one of them a parse failure
    assert (board["n_items"], board["n_error_items"], board["acc1"], board["acc_traj"]) == (1, 0, 0.0, 0.0)
    assert board["parse_failure_rate"] == 0.5


@pytest.mark.unit
def test_a_reask_that_meets_a_server_error_is_a_parse_failure_too(tmp_path):
    down = error_response(503, "overloaded", type_="server_error")
    rows, board, _ = run_scripted(tmp_path, chat_completion("I'd pick the second."), down)
    assert rows[0]["parse_failed"] is True and rows[0]["correct"] is False and board["n_error_items"] == 0


@pytest.mark.unit
def test_a_first_ask_refused_with_400_is_scored_wrong(tmp_path):
    rows, board, _ = run_scripted(tmp_path, error_response(400, CONTEXT_FULL), chat_completion(paper_reply(1)))
    assert rows[0]["parse_failed"] is True and rows[0]["correct"] is False and rows[0]["error"] is None
    assert board["n_items"] == 1 and board["acc1"] == 0.0


@pytest.mark.unit
@pytest.mark.parametrize("status", [500, 429, 401])
def test_a_first_ask_that_never_reaches_the_model_leaves_the_item_unscored(tmp_path, status):
    failure = error_response(status, "no", type_="server_error", headers={"x-should-retry": "false"})
    rows, board, _ = run_scripted(tmp_path, failure, chat_completion(paper_reply(1)))
    assert [r["round"] for r in rows] == [1] and rows[0]["correct"] is None and f"HTTP {status}" in rows[0]["error"]
    assert rows[0]["parse_failed"] is False
    assert (board["n_items"], board["n_error_items"]) == (0, 1)


# -- the reply format ----------------------------------------------------------------------------------------


def sent_schema(body) -> dict:
    assert body["response_format"]["type"] == "json_schema"
    return body["response_format"]["json_schema"]["schema"]


@pytest.mark.unit
def test_paper_reply_format_asks_profiles_and_demand_before_reasoning_and_choice(answered):
    _item, rows = answered
    body = rows["oracle:requests"][0]
    schema = sent_schema(body)
    assert list(schema["properties"]) == [
        "acoustic_profile_1",
        "acoustic_profile_2",
        "situational_demand",
        "reasoning",
        "selected_option",
    ]
    assert all(spec["maxLength"] > 0 for name, spec in schema["properties"].items() if spec["type"] == "string")
    assert schema["properties"]["selected_option"]["enum"] == [1, 2]
    assert set(schema["required"]) == set(schema["properties"])
    text = first_user_text(body)
    assert text.index('"acoustic_profile_1"') < text.index('"situational_demand"') < text.index('"selected_option"')
    oracle = rows["oracle"]
    assert {r["reply_format"] for r in oracle} == {"paper"}
    assert oracle[0]["acoustic_profile_1"] == "slow and low" and oracle[0]["situational_demand"] == "a calm voice"


@pytest.mark.unit
def test_short_reply_format_is_a_setting(tmp_path, localhost_server):
    item = make_item(tmp_path / "clips")
    seen = []

    def handler(body):
        seen.append(body)
        return chat_completion(json.dumps({"reasoning": "calmer", "selected_option": "Option 1"}))

    server = localhost_server(handler)
    slate = write_slate(
        tmp_path,
        targets=[
            {
                "id": "reflective-baseline",
                "provider": "embedded",
                "model": "reflective",
                "family": "eyt-baseline-target",
            },
            remote("oracle", server.base_url, **TEXT_LLM, speech_input="oracle_text"),
        ],
    )
    slate_access, models = SlateAccess(slate_path=str(slate)), ModelAccess(data_dir=str(tmp_path / "data"))
    rows = evaluate_items(
        [item],
        SpeechRoles(slate_access.slate, models).speech_target("oracle"),
        conditions={"default": system_prompt("default")},
        seed=7,
        both_orders=False,
        inference=["sequential", "direct"],
        reply_format="short",
    )
    assert [list(sent_schema(b)["properties"]) for b in seen] == [["reasoning", "selected_option"]] * 3
    assert sent_schema(seen[0])["properties"]["reasoning"]["maxLength"] > 0
    assert "acoustic_profile" not in json.dumps(seen)  # neither the prompt nor the direct history asks for it
    assert {r["reply_format"] for r in rows} == {"short"} and all(r["acoustic_profile_1"] is None for r in rows)
    assert all(r["parse_failed"] is False and r["selected_option"] == 1 for r in rows)


@pytest.mark.unit
def test_the_slate_chooses_the_reply_format(tmp_path):
    import yaml

    from eyt_dagster.slate import SlateError, load_slate

    path = write_slate(tmp_path)
    assert load_slate(path).speech.evaluation.reply_format == "paper"
    data = yaml.safe_load(path.read_text())
    data["speech"]["evaluation"]["reply_format"] = "short"
    path.write_text(yaml.safe_dump(data))
    assert load_slate(path).speech.evaluation.reply_format == "short"
    data["speech"]["evaluation"]["reply_format"] = "long"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SlateError, match=r"speech\.evaluation\.reply_format: Input should be 'paper' or 'short'"):
        load_slate(path)
