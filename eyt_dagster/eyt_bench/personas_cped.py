"""The CPED schema (Chinese Personalized and Emotional Dialogue) to PersonaRecords: the Chinese pool `cped`.

CPED (github.com/scutcyr/CPED, Apache-2.0; its lines are subtitles of Chinese TV series, see
eyt_dagster/fixtures/README.md) is published as `data/CPED/{train,valid,test}_split.csv`, one row per utterance,
each carrying its speaker's gender, age group and Big Five levels. A persona is one speaker of one series: the
speaker's annotated traits, the scenes they appear in and a few of their own lines, written as a Chinese
paragraph. Pure logic: reading the files is resources/datasets/persona_sources.py.

Project decisions recorded here (the corpus is a dialogue corpus, not a persona set):
- one record per (TV_ID, Speaker); the catch-all speaker 其他 ("others") and speakers with fewer than
  `MIN_UTTERANCES` lines are left out: they describe nobody in particular;
- the persona id is `cped-<TV_ID>-<first 10 hex of sha256(speaker)>`, ASCII so it is safe in paths and links;
- age groups map onto the English pools' buckets where they can (young -> 18-29, middle-aged -> 45-59,
  elderly -> 60+, children and teenager -> under-18); the corpus's own group is kept as `age_group`;
- length bucket by the speaker's number of lines: < 20 short, < 60 medium, else long;
- the sample lines quoted in the persona are the speaker's longest distinct ones (ties by utterance id), so
  the text does not depend on file order.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd

from eyt_dagster.eyt_bench.personas import length_bucket, require_columns
from eyt_dagster.eyt_bench.taxonomy import CPED_POOL
from eyt_dagster.eyt_bench.types import PersonaRecord

CPED_SCHEMA = "CPED"
CPED_SPLITS = ("train", "valid", "test")
# The columns of the public release's split files; the records read the first group.
CPED_RECORD_COLUMNS: tuple[str, ...] = (
    "TV_ID",
    "Dialogue_ID",
    "Utterance_ID",
    "Speaker",
    "Gender",
    "Age",
    "Neuroticism",
    "Extraversion",
    "Openness",
    "Agreeableness",
    "Conscientiousness",
    "Scene",
    "Emotion",
    "Utterance",
)
CPED_COLUMNS: tuple[str, ...] = (*CPED_RECORD_COLUMNS, "FacePosition_LU", "FacePosition_RD", "Sentiment", "DA")

OTHERS_SPEAKER = "其他"
MIN_UTTERANCES = 3
SAMPLE_LINES = 3
CPED_LENGTH_UTTERANCES = (20, 60)

AGE_BUCKETS: dict[str, str] = {
    "children": "under-18",
    "teenager": "under-18",
    "young": "18-29",
    "middle-aged": "45-59",
    "elderly": "60+",
}
GENDER_WORDS: dict[str, str] = {"male": "男性", "female": "女性"}
AGE_WORDS: dict[str, str] = {
    "children": "一个孩子",
    "teenager": "一名青少年",
    "young": "一位年轻人",
    "middle-aged": "一位中年人",
    "elderly": "一位老人",
}
# Big Five levels in plain words (CPED annotates each trait high or low).
TRAIT_WORDS: dict[str, dict[str, str]] = {
    "Neuroticism": {"high": "情绪容易起伏", "low": "情绪稳定"},
    "Extraversion": {"high": "外向健谈", "low": "内向话少"},
    "Openness": {"high": "乐于尝试新鲜事", "low": "喜欢熟悉的老样子"},
    "Agreeableness": {"high": "待人随和", "low": "说话直来直去"},
    "Conscientiousness": {"high": "做事认真靠谱", "low": "做事比较随性"},
}
SCENE_WORDS: dict[str, str] = {
    "home": "家里",
    "office": "办公室",
    "school": "学校",
    "mall": "商场",
    "hospital": "医院",
    "restaurant": "餐馆",
    "sports-venue": "运动场所",
    "entertainment-venue": "娱乐场所",
    "car": "车上",
    "outdoor": "户外",
}


def cped_to_records(df: pd.DataFrame, source_name: str) -> list[PersonaRecord]:
    """CPED utterance rows (several per speaker) -> one PersonaRecord per (TV_ID, Speaker), sorted by id."""
    require_columns(df.columns, CPED_RECORD_COLUMNS, CPED_SCHEMA, source_name)
    rows = df[list(CPED_RECORD_COLUMNS)].dropna(subset=["TV_ID", "Speaker", "Utterance"])
    rows = rows.assign(
        TV_ID=rows["TV_ID"].astype(str).str.strip(),
        Speaker=rows["Speaker"].astype(str).str.strip(),
        Utterance=rows["Utterance"].astype(str).str.strip(),
        Utterance_ID=rows["Utterance_ID"].astype(str),
    )
    rows = rows[(rows["Speaker"] != OTHERS_SPEAKER) & (rows["Speaker"] != "") & (rows["Utterance"] != "")]
    records = [
        _record(str(tv_id), str(speaker), group, source_name)
        for (tv_id, speaker), group in rows.groupby(["TV_ID", "Speaker"], sort=True)
        if len(group) >= MIN_UTTERANCES
    ]
    return sorted(records, key=lambda r: r.persona_id)


def persona_id(tv_id: str, speaker: str) -> str:
    return f"cped-{tv_id}-{hashlib.sha256(speaker.encode()).hexdigest()[:10]}"


def _record(tv_id: str, speaker: str, rows: pd.DataFrame, source_name: str) -> PersonaRecord:
    first = rows.sort_values("Utterance_ID").iloc[0]
    gender, age_group = _level(first["Gender"]), _level(first["Age"])
    traits = {trait: _level(first[trait]) for trait in TRAIT_WORDS}
    scenes = sorted({_level(s) for s in rows["Scene"]} & set(SCENE_WORDS))
    counts = rows["Emotion"].map(_level).value_counts()
    emotions = sorted(counts.items(), key=lambda item: (-item[1], item[0]))  # the most frequent; ties by name
    attributes: dict[str, Any] = {
        "name": speaker,
        "tv_id": tv_id,
        "sex": gender if gender in GENDER_WORDS else None,
        "age_group": age_group or None,
        "age_bucket": AGE_BUCKETS.get(age_group, "unknown"),
        **{trait.lower(): level for trait, level in traits.items() if level in ("high", "low")},
        "scenes": scenes,
        "main_emotion": str(emotions[0][0]) if emotions else None,
        "n_utterances": len(rows),
        "n_dialogues": int(rows["Dialogue_ID"].nunique()),
    }
    return PersonaRecord(
        persona_id=persona_id(tv_id, speaker),
        pool=CPED_POOL,
        source=source_name,
        persona_text=cped_paragraph(speaker, gender, age_group, traits, scenes, _sample_lines(rows)),
        attributes={k: v for k, v in attributes.items() if v not in (None, "", [])},
        topic_tags=scenes,
        length_bucket=length_bucket(len(rows), CPED_LENGTH_UTTERANCES),
    )


def cped_paragraph(
    speaker: str, gender: str, age_group: str, traits: dict[str, str], scenes: list[str], lines: list[str]
) -> str:
    """The persona in Chinese: who (name, age group, gender), temperament, where they are seen, how they talk.

    The speaker's own lines come first after the name: they tell personas apart, while the fixed words of the
    traits are shared by many speakers and would pull distinct personas towards the deduplication threshold."""
    who = AGE_WORDS.get(age_group, "一个人")
    if gender in GENDER_WORDS:
        who = f"{who}（{GENDER_WORDS[gender]}）"
    parts = [f"{speaker}，{who}。"]
    if lines:
        parts.append("平时说话像这样：" + "".join(f"「{line}」" for line in lines) + "。")
    temperament = [TRAIT_WORDS[t][level] for t, level in traits.items() if level in TRAIT_WORDS[t]]
    if temperament:
        parts.append("性格上" + "，".join(temperament) + "。")
    if scenes:
        parts.append("常出现在" + "、".join(SCENE_WORDS[s] for s in scenes) + "。")
    return "".join(parts)


def _sample_lines(rows: pd.DataFrame) -> list[str]:
    ordered = rows.assign(length=rows["Utterance"].str.len()).sort_values(
        ["length", "Utterance_ID"], ascending=[False, True]
    )
    return list(dict.fromkeys(ordered["Utterance"]))[:SAMPLE_LINES]


def _level(value: Any) -> str:
    return "" if pd.isna(value) else str(value).strip().lower()
