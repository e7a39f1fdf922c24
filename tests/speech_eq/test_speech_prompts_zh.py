"""SpeechEQ's Chinese prompt files: where they are, that they have the English files' keys and placeholders,
that the generator and the forced-choice code render them with the fields they render the English ones with,
that they are Chinese text, and that the bland-word list is kept out of them. English is unchanged."""

from __future__ import annotations

import json
import re
import string
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from assets.speech_eq.slm_choices import eval_prompt_hash
from eyt_dagster.core.prompts import prompt_hash, render
from eyt_dagster.core.replies import Reply
from eyt_dagster.speech_eq.chat_chooser import oracle_text
from eyt_dagster.speech_eq.choice import ChoiceRequest, choice_messages, choice_round, system_prompt
from eyt_dagster.speech_eq.conditions import CONDITIONS
from eyt_dagster.speech_eq.generators import LLMSpeechGenerator, speech_prompt_hash, tone_slots
from eyt_dagster.speech_eq.prompts import (
    SPEECH_EVAL_PROMPT_KEYS,
    SPEECH_PROMPT_KEYS,
    speech_eval_prompts_path,
    speech_prompts_path,
)
from eyt_dagster.speech_eq.protocol import REPLY_FORMATS, reply_schema
from eyt_dagster.speech_eq.vocabulary import (
    BLAND_WORDS_ZH,
    FAILURE_ARCHETYPES,
    SCENARIO_TYPES,
    SUBSCALES,
    TONE_CHARS_MAX,
    TONE_CHARS_MIN,
    VALENCES,
    eq_scale,
)

from support.speech_items import make_item

pytestmark = pytest.mark.unit

CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")
FILES = {
    "generator": (speech_prompts_path, SPEECH_PROMPT_KEYS),
    "evaluation": (speech_eval_prompts_path, SPEECH_EVAL_PROMPT_KEYS),
}


def packaged(name: str) -> Path:
    return Path(str(importlib_resources.files("eyt_dagster") / "prompts" / name))


def raw(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def texts(value: Any, where: str = "") -> list[tuple[str, str]]:
    """Every text of a prompt section, nested mappings included, as (where, text)."""
    if isinstance(value, dict):
        return [pair for key, sub in value.items() for pair in texts(sub, f"{where}.{key}")]
    return [(where, str(value))]


def cjk_share(text: str) -> float:
    cjk, latin = len(CJK.findall(text)), len(LATIN.findall(text))
    return cjk / (cjk + latin)


# -- where the files are --------------------------------------------------------------------------------------


def test_english_paths_and_hashes_are_what_they_were(monkeypatch):
    for variable in ("EYT_SPEECH_PROMPTS", "EYT_SPEECH_EVAL_PROMPTS", "EYT_SPEECH_PROMPTS_ZH"):
        monkeypatch.delenv(variable, raising=False)
    english, evaluation = packaged("speech_en.yaml"), packaged("speech_eval_en.yaml")
    assert speech_prompts_path() == speech_prompts_path("en") == english
    assert speech_eval_prompts_path() == speech_eval_prompts_path("en") == evaluation
    assert speech_prompt_hash() == prompt_hash(*SPEECH_PROMPT_KEYS, path=english)
    assert speech_prompt_hash("speech_tone") == prompt_hash("speech_tone", path=english)
    assert eval_prompt_hash() == prompt_hash(*SPEECH_EVAL_PROMPT_KEYS, path=evaluation)
    chinese = prompt_hash(*SPEECH_PROMPT_KEYS, path=speech_prompts_path("zh"))
    assert chinese != speech_prompt_hash() and len(chinese) == 12
    assert prompt_hash(*SPEECH_EVAL_PROMPT_KEYS, path=speech_eval_prompts_path("zh")) != eval_prompt_hash()


def test_each_language_has_its_own_override(monkeypatch, tmp_path):
    monkeypatch.setenv("EYT_SPEECH_PROMPTS", str(tmp_path / "en.yaml"))
    monkeypatch.setenv("EYT_SPEECH_EVAL_PROMPTS_ZH", str(tmp_path / "eval_zh.yaml"))
    monkeypatch.delenv("EYT_SPEECH_PROMPTS_ZH", raising=False)
    monkeypatch.delenv("EYT_SPEECH_EVAL_PROMPTS", raising=False)
    assert speech_prompts_path() == tmp_path / "en.yaml"
    assert speech_prompts_path("zh") == packaged("speech_zh.yaml")  # the English override leaves Chinese alone
    assert speech_eval_prompts_path("zh") == tmp_path / "eval_zh.yaml"
    assert speech_eval_prompts_path() == packaged("speech_eval_en.yaml")


@pytest.mark.parametrize("function", [speech_prompts_path, speech_eval_prompts_path])
def test_an_unknown_language_is_refused_by_name(function):
    with pytest.raises(ValueError, match=r"language 'fr'; the languages are \['en', 'zh'\]"):
        function("fr")


# -- the same keys and placeholders --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(FILES))
def test_every_chinese_template_has_the_english_placeholders(kind):
    path_of, keys = FILES[kind]
    english, chinese = raw(path_of("en")), raw(path_of("zh"))
    assert (english["language"], chinese["language"]) == ("en", "zh")
    assert set(chinese) == set(english) and set(keys) <= set(chinese)
    compared = 0
    for key in english:
        if key == "language":
            continue
        en_texts, zh_texts = dict(texts(english[key], key)), dict(texts(chinese[key], key))
        assert set(zh_texts) == set(en_texts), key  # every part, and every archetype of the nested mappings
        for where, text in en_texts.items():
            assert placeholders(zh_texts[where]) == placeholders(text), where
            compared += 1
    assert compared == (32 if kind == "generator" else 18)  # all parts counted: none skipped by accident


def test_archetype_names_stay_canonical_in_the_chinese_file():
    chinese = raw(speech_prompts_path("zh"))
    assert list(chinese["speech_scenario"]["archetypes"]) == list(FAILURE_ARCHETYPES)
    assert list(chinese["speech_tone"]["archetype_voices"]) == list(FAILURE_ARCHETYPES)


# -- rendered by the generator, replies parsed as English ones ------------------------------------------------

SCENARIO = {
    "title": "没等回来的狗",
    "context": "凌晨的医院休息室；两名护士。",
    "description": "安娜告诉本杰她的狗昨夜死了，而她还要上十二个小时的班。",
    "speaker1": {"name": "安娜", "role": "护士", "gender": "Female", "persona": "筋疲力尽、一碰就碎"},
    "speaker2": {"name": "本杰", "role": "同班护士", "gender": "male"},
    "resonant_persona": "沉得住气、全心在场",
    "dissonant_personas": ["The Toxic Optimist", "anxious spiraler"],
    "skill_tested": "察觉同事的悲伤",
    "target_social_intent": "放慢下来，给她的难过留出地方",
}
LINES = ["本杰——你有空吗？我……是胡椒的事。", "有空。怎么了？", "它昨晚走了。我在门口发现的，可我还是来上班了——我也不知道为什么。",
         "好。先坐一会儿。", "不行，病房满了，我得一直忙……", "行。你的第一轮我替你去。"]  # fmt: skip
TONES = {
    "context": "语速偏快，音调上扬，句间短促换气",
    "resonant": "放慢语速，压低音调，句间留长停顿，尾音下沉",
    "dissonant:toxic optimist": "嗓门放大，音调一路上扬，字字蹦跳带笑",
    "dissonant:anxious spiraler": "音调尖高发颤，呼吸急促凌乱，越说越快",
}


class RecordingClient:
    """A chat client that records each request and answers it with a Chinese reply, validated by the real
    reply schema as the OpenAI client does."""

    model_id = "zh-recorder"

    def __init__(self) -> None:
        self.requests: list[tuple[str, list[dict[str, str]]]] = []

    def _answer(self, purpose: str, messages: list[dict[str, str]]) -> str:
        stage = purpose.split(":")[0]
        if stage == "speech_scenario":
            return json.dumps(SCENARIO, ensure_ascii=False)
        if stage == "speech_dialogue":
            lines = [{"turn": t, "speaker": 2 - t % 2, "text": text} for t, text in enumerate(LINES, start=1)]
            return json.dumps({"lines": lines}, ensure_ascii=False)
        if stage == "speech_dialogue_check":
            return json.dumps(
                {"plausible_both_tones": True, "note": "第 4、6 句两种念法都说得通。"}, ensure_ascii=False
            )
        if stage == "speech_tone":
            kind = purpose.split(":", 3)[3].rsplit(":", 1)[0]  # speech_tone:<slug>:<turn>:<kind>:<attempt>
            return f"“{TONES[kind]}”"
        options = dict(re.findall(r"^(\d)\. (.*)$", messages[-1]["content"], flags=re.MULTILINE))
        number = {text: int(n) for n, text in options.items()}
        reply = {
            "resonant": number[TONES["resonant"]],
            "dissonant": number[TONES["dissonant:toxic optimist"]],
            "reasoning": "放慢的低音给悲伤留出地方。",
        }
        return json.dumps(reply, ensure_ascii=False)

    def complete_text(self, messages, *, purpose):
        self.requests.append((purpose, messages))
        return Reply(value=self._answer(purpose, messages), raw="")

    def complete_json(self, messages, schema, *, purpose):
        self.requests.append((purpose, messages))
        text = self._answer(purpose, messages)
        return Reply(value=schema.model_validate_json(text), raw=text)


def test_the_generator_renders_the_chinese_file_and_reads_chinese_replies(monkeypatch):
    client = RecordingClient()
    gen = LLMSpeechGenerator(
        client, seed=3, bland_words=BLAND_WORDS_ZH, min_words=TONE_CHARS_MIN, max_words=TONE_CHARS_MAX, language="zh"
    )
    scenario = gen.scenario("interpersonal_empathy", "Negative", 0)
    assert scenario.title == "没等回来的狗" and scenario.speaker1.gender == "female"
    assert scenario.dissonant_personas == ["toxic optimist", "anxious spiraler"]
    lines = gen.dialogue(scenario, [(gen.dialogue(scenario), "第 4 句只配得上关切的念法")])
    assert [line.text for line in lines] == LINES and [line.speaker for line in lines] == [1, 2, 1, 2, 1, 2]
    assert gen.validate_dialogue(scenario, lines) == (True, "第 4、6 句两种念法都说得通。")
    options = []
    for turn, kinds in tone_slots(scenario).items():
        for kind in kinds:
            rejected = [("语速偏快，声音平静", "bland word(s) ['平静']")] if turn == 1 else []
            instruction = gen.tone_instruction(scenario, lines, turn, kind, 1, rejected)
            assert instruction == TONES[kind]  # the Chinese quotation marks are taken off
            if turn == 4:
                options.append((kind, instruction))
    resonant, dissonant, why = gen.select_tones(scenario, lines, 4, options)
    assert (options[resonant][0], options[dissonant][0]) == ("resonant", "dissonant:toxic optimist")
    assert why.startswith("放慢的低音")

    stages = {purpose.split(":")[0] for purpose, _ in client.requests}
    assert stages == set(SPEECH_PROMPT_KEYS)
    for purpose, messages in client.requests:
        for message in messages:
            assert cjk_share(message["content"]) > 0.5, (purpose, message["role"], message["content"][:80])
    tone_system = next(m for p, ms in client.requests if p.startswith("speech_tone:") for m in ms)["content"]
    assert "12 到 24 个汉字" in tone_system and '"温柔", "柔和"' in tone_system
    scenario_system = client.requests[0][1][0]["content"]
    assert "- toxic optimist: 用响亮" in scenario_system and '"apathetic wall"' in scenario_system


def test_the_scenario_request_is_chinese_for_every_subscale_valence_and_type():
    path = speech_prompts_path("zh")
    shares = [
        cjk_share(
            render("speech_scenario", "user", path=path, eq_scale=eq_scale(s), valence=v, scenario_type=t, variant=1)
        )
        for s in SUBSCALES
        for v in VALENCES
        for t in SCENARIO_TYPES
    ]
    assert len(shares) == 15 * 3 * 8 and min(shares) > 0.5


# -- rendered by the forced-choice code ----------------------------------------------------------------------


def test_the_forced_choice_rounds_render_the_chinese_file(monkeypatch, tmp_path):
    english = make_item(tmp_path)
    item = english.model_copy(update={"generation_metadata": {**english.generation_metadata, "language": "zh"}})
    for condition in CONDITIONS:
        assert cjk_share(system_prompt(condition, "zh")) > 0.5, condition
    round1 = choice_round(item, 1, 7, "seeded")
    round2 = choice_round(item, 2, 7, "seeded", turn4_in_history="resonant")
    for reply_format in REPLY_FORMATS:
        request = ChoiceRequest(
            item=item,
            condition="default",
            system_prompt=system_prompt("default", "zh"),
            round1=round1,
            round2=round2,
            round1_answer="{}",
            reply_format=reply_format,
        )
        messages = choice_messages(request, oracle_text)
        first, second = messages[1]["content"], messages[3]["content"]
        assert "地点：A quiet office after hours" in first and "说话人 1 是Maya (designer)。" in first
        assert "只凭念法判断" in first and "对话继续。" in second and '"selected_option": 1 或 2}' in second
        assert "选项 1：" in first and "说话人 1：" in first and "Option" not in first + second
        english_request = ChoiceRequest(
            item=english, condition="default", system_prompt=system_prompt("default"), round1=round1
        )
        assert "Option 1:" in str(choice_messages(english_request, oracle_text)[1]["content"])

    path = speech_eval_prompts_path("zh")
    fields = {"context": "下班后安静的办公室", "situation": "玛雅告诉利奥她负责的项目被砍了。", "speaker1": "玛雅（设计师）",
              "speaker2": "利奥（组长）"}  # fmt: skip
    for key in SPEECH_EVAL_PROMPT_KEYS:
        for part in raw(path)[key]:
            assert cjk_share(render(key, part, path=path, **fields)) > 0.5, (key, part)


def test_a_reply_to_the_chinese_answer_text_parses_as_an_english_one():
    paper = {
        "acoustic_profile_1": "音量低，语速慢，停顿长",
        "acoustic_profile_2": "音量大，语速快，音调上扬",
        "situational_demand": "这一刻需要放慢、压低的声音",
        "reasoning": "选项 2 的欢快和她的损失对不上。",
        "selected_option": "1",
    }
    assert reply_schema("paper").model_validate_json(json.dumps(paper, ensure_ascii=False)).selected_option == 1
    short = {"reasoning": "选项 1 更贴合。", "selected_option": 2}
    assert reply_schema("short").model_validate_json(json.dumps(short, ensure_ascii=False)).selected_option == 2


# -- the bland words ---------------------------------------------------------------------------------------


def test_the_chinese_bland_words_are_kept_out_of_the_chinese_prompts():
    assert len(BLAND_WORDS_ZH) >= 15 and len(set(BLAND_WORDS_ZH)) == len(BLAND_WORDS_ZH)
    assert all(len(word) >= 2 and all(CJK.match(c) for c in word) for word in BLAND_WORDS_ZH)
    assert {"温柔", "柔和", "自然", "正常", "平静", "友好"} <= set(BLAND_WORDS_ZH)
    for path_of, keys in FILES.values():
        data = raw(path_of("zh"))
        for key in keys:
            for where, text in texts(data[key], key):
                for line in text.splitlines():
                    if "{bland_words}" in line:  # the line that lists them as banned
                        continue
                    assert not [w for w in BLAND_WORDS_ZH if w in line], (where, line)
    path = speech_prompts_path("zh")
    tone = render("speech_tone", "system", path=path, bland_words="、".join(BLAND_WORDS_ZH), min_words=12, max_words=24)
    assert all(tone.count(word) == 1 for word in BLAND_WORDS_ZH)
