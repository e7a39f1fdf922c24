"""The text-reading SpeechEQ target kinds through the real openai client against a localhost server: the
cascade (reference transcripts + acoustic emotion cues, emo_num and emo_des) and the oracle text check
(transcripts + tone instructions). What the model reads is checked in the requests the server received."""

import json
import re

import pytest

from conftest import write_slate
from eyt_dagster.speech.choice import system_prompt
from eyt_dagster.speech.evaluation import evaluate_items
from openai_stub_server import chat_completion, serve
from resources.models import BenchmarkResource
from speech_items import make_item


def remote(server, target_id, **fields):
    return {"id": target_id, "provider": "openai", "base_url": server.base_url, "model": "text-llm", "family": "stub",
            "benchmarks": ["speech_eq"], **fields}


@pytest.fixture
def answered(tmp_path):
    item = make_item(tmp_path / "clips")
    requests = []

    def handler(body):
        requests.append(body)
        return chat_completion(json.dumps({"selected_option": 1, "reasoning": "read it"}))

    with serve(handler) as server:
        slate = write_slate(tmp_path, targets=[
            {"id": "reflective-baseline", "provider": "embedded", "model": "reflective", "family": "eyt-baseline-target"},
            remote(server, "cascade-num", speech_input="cascaded", cascade={"cues": "emo_num"}),
            remote(server, "cascade-des", speech_input="cascaded", cascade={"cues": "emo_des"}),
            remote(server, "oracle", speech_input="oracle_text")])
        eyt = BenchmarkResource(slate_path=str(slate), data_dir=str(tmp_path / "data"))
        rows = {}
        for target in ("cascade-num", "cascade-des", "oracle"):
            before = len(requests)
            rows[target] = evaluate_items([item], eyt.speech_target(target), conditions={"default": system_prompt("default")},
                                          seed=7, both_orders=False, inference=["sequential"])
            rows[target + ":requests"] = requests[before:]
    return item, rows


def first_user_text(body) -> str:
    content = body["messages"][1]["content"]
    assert isinstance(content, str)  # text-only targets get plain text, no audio parts
    return content


def test_cascade_reads_transcripts_with_numeric_or_descriptive_cues(answered):
    item, rows = answered
    numeric = first_user_text(rows["cascade-num:requests"][0])
    assert item.conversation[0].text in numeric and "[voice: pitch" in numeric and " Hz" in numeric and "dB" in numeric
    words = first_user_text(rows["cascade-des:requests"][0])
    assert "[voice:" in words and " Hz" not in words and any(w in words for w in ("pitch", "quiet", "loud", "slow", "fast"))
    assert "input_audio" not in json.dumps(rows["cascade-num:requests"][0])


def test_oracle_reads_the_tone_instructions_and_is_scored(answered):
    item, rows = answered
    text = first_user_text(rows["oracle:requests"][0])
    assert "[spoken: slow, low and warm]" in text and "[spoken: loud, fast and chirpy]" in text
    assert [r["round"] for r in rows["oracle"]] == [1, 2]
    assert all(r["correct"] == (r["correct_option"] == 1) for r in rows["oracle"])
    assert all(r["calls"] == 1 and r["tokens"] > 0 for r in rows["oracle"])


def test_a_speech_only_target_cannot_run_eyt_and_vice_versa(answered, tmp_path):
    slate = write_slate(tmp_path)
    eyt = BenchmarkResource(slate_path=str(slate), data_dir=str(tmp_path / "data"))
    with pytest.raises(ValueError, match="does not run speech_eq"):
        eyt.speech_target("reflective-baseline")
    with pytest.raises(ValueError, match="does not run eyt_bench"):
        eyt.target("random-chooser-baseline")


def test_cascade_with_a_dimensional_regression_model_end_to_end(tmp_path):
    """A cascade whose cues come from a (tiny, random) wav2vec2 regression model: the slm_choices asset runs it
    through the real openai client, the model reads each clip's valence / arousal / dominance in its prompt,
    and every row records the cue source."""
    import pandas as pd
    from dagster import DagsterInstance, build_asset_context

    from assets.speech.evaluation import slm_choices
    from eyt_dagster.speech.cues import cues_from_dimensions
    from eyt_dagster.speech.layout import item_rows
    from eyt_dagster.speech.partitions import SPEECH_TARGETS_PARTITION
    from resources.emotion_regression import DimensionalEmotionModel
    from tiny_emotion_models import save_tiny_regression

    item = make_item(tmp_path / "clips")
    model_dir = save_tiny_regression(tmp_path / "tiny-vad", {0: "dominance", 1: "valence", 2: "arousal"})
    vad = DimensionalEmotionModel(str(model_dir))
    clip = {c.file_number: c for c in item.clips}
    requests = []

    def handler(body):
        requests.append(body)
        return chat_completion(json.dumps({"selected_option": 2, "reasoning": "read the cues"}))

    instance = DagsterInstance.ephemeral()
    with serve(handler) as server:
        cascade = {"emotion_model_path": str(model_dir)}
        slate = write_slate(tmp_path, targets=[
            {"id": "reflective-baseline", "provider": "embedded", "model": "reflective", "family": "eyt-baseline-target"},
            remote(server, "vad-num", speech_input="cascaded", cascade={**cascade, "cues": "emo_num"}),
            remote(server, "vad-des", speech_input="cascaded", cascade={**cascade, "cues": "emo_des"})])
        eyt = BenchmarkResource(slate_path=str(slate), data_dir=str(tmp_path / "data"))
        instance.add_dynamic_partitions(SPEECH_TARGETS_PARTITION, ["vad-num", "vad-des"])
        frames = {}
        for target in ("vad-num", "vad-des"):
            before = len(requests)
            context = build_asset_context(partition_key=target, instance=instance)
            frames[target] = slm_choices(context, eyt=eyt, eq_items=pd.DataFrame([item_rows(item)])).value
            frames[target + ":requests"] = requests[before:]
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
    assert all(re.fullmatch(r"valence -?\d\.\d\d, arousal -?\d\.\d\d, dominance -?\d\.\d\d \(each 0-1, low to high\)", c)
               for c in numeric)
    assert all(" arousal" in c and not re.search(r"\d", c) for c in words)  # words only, no numbers
