"""Each EYT-Bench label's display name in each language other than English: the one place they are written.

Label ids stay canonical (the English snake-case ids of taxonomy.py) in every table, schema and cache key, so a
run in Chinese and one in English join in one leaderboard. A display name is what a person reads: in a Chinese
prompt beside the id the model must answer with, and in reports.
"""

from __future__ import annotations

from eyt_dagster.eyt_bench.taxonomy import DIMENSION_NAMES, EMOTIONS, EXPLICIT_INTENTS, LATENT_INTENTS, PROGRESS_LABELS

LABEL_NAMES: dict[str, dict[str, str]] = {
    "zh": {
        # explicit intents
        "information_seeking": "询问信息",
        "seeking_advice": "寻求建议",
        "task_completion": "请求完成任务",
        "decision_support": "帮忙做决定",
        "planning": "制定计划",
        "recommendation_request": "请求推荐",
        "opinion_seeking": "征求看法",
        "emotional_venting": "倾诉情绪",
        "experience_sharing": "分享经历",
        "clarification": "澄清追问",
        "feedback": "给出反馈",
        "small_talk": "闲聊",
        # latent intents
        "seeking_validation": "希望被认可",
        "building_connection": "想建立亲近感",
        "need_for_security": "需要安全感",
        "need_to_be_understood": "渴望被理解",
        "seeking_autonomy": "想自己做主",
        "self_improvement": "想提升自己",
        "seeking_relief": "想卸下压力",
        "seeking_enjoyment": "想找点乐子",
        # emotions
        "sadness": "难过",
        "anxiety": "焦虑",
        "anger": "生气",
        "frustration": "挫败",
        "loneliness": "孤独",
        "fear": "害怕",
        "guilt": "内疚",
        "joy": "开心",
        "excitement": "兴奋",
        "gratitude": "感激",
        "hope": "期待",
        "pride": "自豪",
        "relief": "如释重负",
        "neutral": "平静",
        "curiosity": "好奇",
        # progress towards the final intent
        "not_started": "还没开始",
        "in_progress": "进行中",
        "achieved": "已达成",
        # the judge's three dimensions
        "empathy": "共情",
        "persona": "人设一致",
        "anthropomorphic": "拟人化",
    }
}

_ALL_LABELS = (*EXPLICIT_INTENTS, *LATENT_INTENTS, *EMOTIONS, *PROGRESS_LABELS, *DIMENSION_NAMES.values())
for _language, _names in LABEL_NAMES.items():
    assert set(_names) == set(_ALL_LABELS), f"{_language}: display names must cover every label exactly"


def display_name(label: str, language: str) -> str:
    """The label's name for a reader of `language`; the id itself in English (or for a language with no names)."""
    return LABEL_NAMES.get(language, {}).get(label, label)


def glossed(labels: tuple[str, ...], language: str) -> str:
    """The labels as a prompt lists them: ids only in English, `id（name）` in another language, so the model
    reads the meaning and still answers with the id."""
    if language not in LABEL_NAMES:
        return ", ".join(labels)
    return "、".join(f"{label}（{display_name(label, language)}）" for label in labels)
