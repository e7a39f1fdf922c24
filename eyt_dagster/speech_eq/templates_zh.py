"""The embedded SpeechEQ template generator in Mandarin Chinese: the same baseline as templates.py, its text
written in Chinese for this project. The draws under the seed are the English generator's (templates.draw_cast),
so a Chinese build has the same cast genders, archetypes and scenario types as an English one; every id a table
joins on (subscale, valence, scenario type, archetype, speaker role) stays canonical, only the text is Chinese.
Its tone instructions are physical directions that prosody.LEXICON_ZH renders."""

from __future__ import annotations

from functools import partial

from eyt_dagster.speech_eq import templates
from eyt_dagster.speech_eq.item_types import Line, Scenario, Speaker
from eyt_dagster.speech_eq.vocabulary import FAILURE_ARCHETYPES, SCENARIO_TYPES, SUBSCALES

# What each subscale's scenario puts at stake, in the catalyst's words, and the skill it tests.
KERNELS: dict[str, tuple[str, str]] = {
    "self_regard": ("考评里说我还没准备好带团队", "坦然接受对自己的真实评价"),
    "self_actualization": ("我推掉了一直想上的那门课", "追求对自己有意义的目标"),
    "emotional_self_awareness": ("我今天冲所有人发火，自己也不知道为什么", "说清自己的感受"),
    "emotional_expression": ("我一直没告诉姐姐她那句话让我多难受", "坦率地表达感受"),
    "assertiveness": ("经理总是把我的活儿交给别人", "为自己据理力争"),
    "independence": ("不问父母，我什么都决定不了", "自己拿主意"),
    "interpersonal_relationships": ("最好的朋友好几个月没给我打过电话了", "维系亲密的关系"),
    "empathy": ("我的狗今天早上走了，可我还得去上班", "体察别人的感受"),
    "social_responsibility": ("路又被水淹了，邻居们还是没人管", "为集体出一份力"),
    "problem_solving": ("项目明天就要交，数据却全丢了", "在情绪里解决问题"),
    "reality_testing": ("我敢肯定整个团队都在背后讨厌我", "看清事情本来的样子"),
    "impulse_control": ("我差点当着所有人的面发邮件辞职", "克制一时的冲动"),
    "flexibility": ("上线前一个小时，他们把整个方案全改了", "适应变化"),
    "stress_tolerance": ("三个截止日期挤在了同一个下午", "扛住压力"),
    "optimism": ("我的考试又没过，已经是第二次了", "受挫之后仍抱有希望"),
}
assert set(KERNELS) == {sub for _, sub in SUBSCALES.values()}

VALENCE_OPENERS = {
    "Positive": ("我有个消息，说实话，我都不知道该高兴还是该紧张", "满怀期待"),
    "Negative": ("有件事我得告诉你，不是什么好事", "心烦意乱"),
    "Conflict": ("你做的一件事，我们得好好谈一谈", "怒气冲冲"),
}
VALENCE_NAMES = {"Positive": "积极", "Negative": "消极", "Conflict": "冲突"}
SCENARIO_TYPE_NAMES = {
    "workplace": "职场",
    "medical": "就医",
    "educational": "校园",
    "family": "家庭",
    "friendship": "朋友之间",
    "romantic": "恋人之间",
    "customer service": "客服",
    "community": "社区",
}
assert set(SCENARIO_TYPE_NAMES) == set(SCENARIO_TYPES)
NAMES = {"female": ("林悦", "王芳", "陈静", "刘婷"), "male": ("张伟", "李强", "赵磊", "周杰")}
# Test-subject lines that read plausibly in a resonant or a dissonant voice (semantically neutral).
NEUTRAL_TURN4 = ("好。你从头跟我说说是怎么回事。", "我在听。那接下来会怎么样？")
NEUTRAL_TURN6 = ("好吧。我们一起想想下一步怎么走。", "行。这件事我们今天就处理。")

# Physical vocal directions of 12-24 characters (pace, pitch, loudness, pauses, voice quality).
CONTEXT_TONES = {
    "Positive": "语速轻快，声音明亮，音调上扬，句子之间有短暂的停顿",
    "Negative": "语速缓慢，声音沉重，音调低，字与字之间有颤抖的长停顿",
    "Conflict": "声音响亮，语速快，咬字短促生硬，节奏又急又硬",
}
SUBJECT_CONTEXT_TONE = "语速适中，音调低而平稳，每个字都咬得清清楚楚"
RESONANT_TONES = {
    "Positive": "声音明亮活泼，语速适中，音调饱满上扬",
    "Negative": "语速缓慢，音调低，声音轻，停顿长，气息平稳",
    "Conflict": "声音坚定，语速缓慢，音调低而平稳，一字一顿",
}
ARCHETYPE_TONES = {
    "toxic optimist": "语速极快，音调高亢，声音响亮，语调夸张地跳跃上扬",
    "defensive snappy reactor": "声音响亮，语速快，咬字短促生硬，毫无停顿",
    "condescending explainer": "语速缓慢拖长，声音响亮，每个字的音调都夸张起伏",
    "impatient evader": "语速仓促飞快，咬字短促，一口气说完",
    "anxious spiraler": "语速快，声音发抖，音调尖高，气喘吁吁，节奏凌乱",
    "apathetic wall": "声音平板单调，语速缓慢，音调低，毫无起伏",
}
assert set(ARCHETYPE_TONES) == set(FAILURE_ARCHETYPES)


def make_scenario(slug: str, valence: str, index: int, seed: int) -> Scenario:
    """A Chinese scenario for one subscale and valence (templates.make_scenario's draws, Chinese text)."""
    rng = templates._rng(seed, slug, valence, index)
    _, sub = SUBSCALES[slug]
    stake, skill = KERNELS[sub]
    (g1, n1), (g2, n2), dissonant, kind = templates.draw_cast(rng, NAMES)
    return Scenario(
        subscale=slug,
        valence=valence,
        scenario_type=kind,
        title=f"{skill}（{VALENCE_NAMES[valence]}，{SCENARIO_TYPE_NAMES[kind]}）",
        context=f"{n1}和{n2}之间的一段{SCENARIO_TYPE_NAMES[kind]}对话。",
        description=f"{n1}对{n2}说：{stake}。",
        speaker1=Speaker(name=n1, role="catalyst", gender=g1, persona=VALENCE_OPENERS[valence][1]),
        speaker2=Speaker(name=n2, role="test subject", gender=g2),
        resonant_persona=f"善于{skill}的人",
        dissonant_personas=dissonant,
        skill_tested=skill,
        target_social_intent=f"帮助{n1}{skill}",
    )


def make_dialogue(scenario: Scenario, seed: int) -> list[Line]:
    """Six turns with templates.make_dialogue's arc: 1 opens, 2 acknowledges, 3 peaks, 4 tests, 5 sustains, 6 tests."""
    rng = templates._rng(seed, scenario.title, scenario.description)
    opener = VALENCE_OPENERS[scenario.valence][0]
    stake = scenario.description.split("：", 1)[-1].rstrip("。")
    return [
        Line(turn=1, speaker=1, text=f"{scenario.speaker2.name}，{opener}。"),
        Line(turn=2, speaker=2, text="当然，你说，我听着。"),
        Line(turn=3, speaker=1, text=f"说实话，{stake}，我脑子里全是这件事。"),
        Line(turn=4, speaker=2, text=rng.choice(NEUTRAL_TURN4)),
        Line(turn=5, speaker=1, text="我现在真的不知道该拿自己怎么办。"),
        Line(turn=6, speaker=2, text=rng.choice(NEUTRAL_TURN6)),
    ]


tone_options = partial(
    templates.tone_options,
    context=CONTEXT_TONES,
    subject=SUBJECT_CONTEXT_TONE,
    resonant=RESONANT_TONES,
    archetypes=ARCHETYPE_TONES,
)
