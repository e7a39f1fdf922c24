"""Label taxonomies, rubric and constants of EYT-Bench: the one place each of these facts lives.

The paper (App. C, Table 11) gives the class counts and a few examples but not the full lists; the lists
below are the project's decision (docs/method.md#label-taxonomies). Prompts render these lists from here.
"""

from __future__ import annotations

from typing import Literal, get_args

# The persona pools: the paper's two (§3.2: Pool A from Nemotron-Personas-USA, Pool B from PersonaMem-v2) and a
# Chinese one from CPED (docs/languages.md). A slate that names no pools plays the paper's two.
NEMOTRON_POOL, PERSONAMEM_POOL, CPED_POOL = "nemotron_usa", "personamem_v2", "cped"
POOLS: tuple[str, ...] = (NEMOTRON_POOL, PERSONAMEM_POOL, CPED_POOL)
PAPER_POOLS: tuple[str, ...] = (NEMOTRON_POOL, PERSONAMEM_POOL)
# How each stratified pool is stratified (the others are sampled simply): Pool A by occupation group x age
# bucket (paper App. B); CPED by gender x age bucket, the two attributes every speaker of it carries.
STRATIFIED_POOLS: dict[str, str] = {NEMOTRON_POOL: "occupation_age", CPED_POOL: "sex_age"}
# The language each pool's corpus is written in: the language it is played in unless the slate sets another.
POOL_LANGUAGES: dict[str, str] = {NEMOTRON_POOL: "en", PERSONAMEM_POOL: "en", CPED_POOL: "zh"}

ExplicitIntent = Literal[
    "information_seeking",
    "seeking_advice",
    "task_completion",
    "decision_support",
    "planning",
    "recommendation_request",
    "opinion_seeking",
    "emotional_venting",
    "experience_sharing",
    "clarification",
    "feedback",
    "small_talk",
]
LatentIntent = Literal[
    "seeking_validation",
    "building_connection",
    "need_for_security",
    "need_to_be_understood",
    "seeking_autonomy",
    "self_improvement",
    "seeking_relief",
    "seeking_enjoyment",
]
# What saying each latent intent outright sounds like: the text the simulator audit compares each simulator
# utterance with (eyt_dagster/eyt_bench/simulator_audit.py). A hidden intent is meant to show through the user's
# turns, never to be stated; an utterance close to one of these leaks it.
LATENT_STATEMENTS: dict[str, str] = {
    "seeking_validation": "I want you to tell me that I am right and that what I did was okay.",
    "building_connection": "I want to feel a personal connection with you, like talking to a friend.",
    "need_for_security": "I want to feel safe and be reassured that everything will be fine.",
    "need_to_be_understood": "I want you to really understand how I feel.",
    "seeking_autonomy": "I want to make this decision on my own, without being told what to do.",
    "self_improvement": "I want to become a better version of myself and grow.",
    "seeking_relief": "I want relief from this stress and to feel lighter.",
    "seeking_enjoyment": "I want to have fun and enjoy myself.",
}
# The same statements in Chinese, for a pool played in Chinese (the simulator audit compares its utterances with them).
LATENT_STATEMENTS_ZH: dict[str, str] = {
    "seeking_validation": "我希望你告诉我，我是对的，我做的事没有错。",
    "building_connection": "我想和你有一种亲近的感觉，就像跟朋友聊天一样。",
    "need_for_security": "我想感到安全，想听你说一切都会好起来的。",
    "need_to_be_understood": "我希望你真正理解我现在的感受。",
    "seeking_autonomy": "我想自己做这个决定，不想别人告诉我该怎么做。",
    "self_improvement": "我想成为更好的自己，想不断成长。",
    "seeking_relief": "我想从这种压力里解脱出来，让自己轻松一点。",
    "seeking_enjoyment": "我想开开心心地玩一玩，好好享受一下。",
}
LATENT_STATEMENTS_BY_LANGUAGE: dict[str, dict[str, str]] = {"en": LATENT_STATEMENTS, "zh": LATENT_STATEMENTS_ZH}
NEGATIVE_EMOTIONS = ("sadness", "anxiety", "anger", "frustration", "loneliness", "fear", "guilt")
POSITIVE_EMOTIONS = ("joy", "excitement", "gratitude", "hope", "pride", "relief")
NEUTRAL_EMOTIONS = ("neutral", "curiosity")
Emotion = Literal[
    "sadness",
    "anxiety",
    "anger",
    "frustration",
    "loneliness",
    "fear",
    "guilt",
    "joy",
    "excitement",
    "gratitude",
    "hope",
    "pride",
    "relief",
    "neutral",
    "curiosity",
]
Progress = Literal["not_started", "in_progress", "achieved"]

EXPLICIT_INTENTS: tuple[str, ...] = get_args(ExplicitIntent)
LATENT_INTENTS: tuple[str, ...] = get_args(LatentIntent)
EMOTIONS: tuple[str, ...] = get_args(Emotion)
PROGRESS_LABELS: tuple[str, ...] = get_args(Progress)

assert len(EXPLICIT_INTENTS) == 12 and len(LATENT_INTENTS) == 8 and len(EMOTIONS) == 15
assert set(LATENT_STATEMENTS) == set(LATENT_INTENTS) == set(LATENT_STATEMENTS_ZH)
assert set(EMOTIONS) == set(NEGATIVE_EMOTIONS + POSITIVE_EMOTIONS + NEUTRAL_EMOTIONS)

# Judge rubric (paper §3.5.3, Figure 3): three dimensions of five sub-indicators each.
RUBRIC: dict[str, tuple[str, ...]] = {
    "empathy": ("recognition", "attribution", "resonance", "response", "support"),
    "persona": ("style", "value", "culture", "memory", "security"),
    "anthro": ("colloquial", "emotional", "flow", "flexibility", "rhythm"),
}
# Reported names of the dimensions (leaderboard columns).
DIMENSION_NAMES: dict[str, str] = {"empathy": "empathy", "persona": "persona", "anthro": "anthropomorphic"}
# The metrics with one value per dialogue that targets are compared on, pair by pair (the pairwise table, and the
# sequential design's margins).
PAIRED_METRICS = (
    "explicit_acc",
    "latent_acc",
    "emotion_acc",
    "drift",
    "ficr",
    "satisfaction",
    *DIMENSION_NAMES.values(),
)
SUBSCORE_COLUMNS: tuple[str, ...] = tuple(f"{dim}_{sub}" for dim, subs in RUBRIC.items() for sub in subs)

# Sub-indicator scales: the main text's 3-point scale is the default; App. D's binary one is a setting.
JUDGE_SCALES: dict[str, tuple[float, ...]] = {"three_point": (0.0, 0.5, 1.0), "binary": (0.0, 1.0)}

# Headline scaling (docs/method.md#headline-scales): a dimension sum 0-5 shows as 0-100; satisfaction 1-5 too.
DIMENSION_TO_100 = 20.0
SATISFACTION_MIN, SATISFACTION_MAX = 1, 5

# The alpha sweep of the warm-up ablation (paper Table 8).
ALPHA_SWEEP: tuple[float, ...] = (0.05, 0.10, 0.15)
