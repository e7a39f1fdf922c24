"""A dialogue's readable name, for the pages that list or title dialogues: who its ChatSEED's persona is and what the
conversation is about ("34-year-old female registered nurse · a move to a new city"), instead of its id alone
(`nemotron_usa:6681a22c...`, which the pages keep showing in small print and in every link).

What the warehouse holds about a ChatSEED: dialogue.chat_seeds has its persona's id and text and the topic the
simulator wrote ("a few words naming what the conversation is about"); dialogue.persona_pool has the persona's
`attributes` as the pool's loader read them from its dataset: Nemotron's age, sex and occupation, PersonaMem's age,
gender, job title and short persona, CPED's speaker name. The persona is named from those attributes, else from the
first words of its text. The topic is model text like any other: the templates escape the name, and it is cut short
so that a long one cannot widen a page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from eyt_dagster.explorer.queries import plain
from eyt_dagster.explorer.reads import Warehouse

TABLES = ("dialogue.chat_seeds", "dialogue.persona_pool")
SEPARATOR = " \u00b7 "
WHO_CHARS = 60  # the persona's part of a name, at most
TOPIC_CHARS = 60  # the topic's part
_NAMES = """
SELECT c.seed_id, c.topic, c.persona_text, p.attributes
FROM chat_seeds c LEFT JOIN persona_pool p ON p.persona_id = c.persona_id AND p.pool = c.pool
WHERE c.pool = $pool AND ($all OR list_contains($seeds, c.seed_id))
ORDER BY c.topic IS NULL
"""


def seed_names(wh: Warehouse, pool: str, seed_ids: Iterable[str] | None = None) -> dict[str, str]:
    """seed_id -> its readable name, for the ChatSEEDs of `pool` (only `seed_ids` when given) that have a chat_seeds
    row; a ChatSEED without one (or with nothing to name it by) is left out, and the pages show its id alone."""
    wanted = sorted({str(s) for s in seed_ids}) if seed_ids is not None else []
    if seed_ids is not None and not wanted:
        return {}
    params = {"pool": pool, "all": seed_ids is None, "seeds": wanted}
    with wh.sql(TABLES, {"pool": pool}) as con:
        rows = [plain(r) for r in con.execute(_NAMES, params).df().to_dict("records")]
    names: dict[str, str] = {}
    for row in rows:  # a row with a topic first: an error row of the same ChatSEED does not hide it
        found = dialogue_name(row.get("topic"), row.get("persona_text"), _attributes(row.get("attributes")))
        if found and str(row["seed_id"]) not in names:
            names[str(row["seed_id"])] = found
    return names


def dialogue_name(topic: Any, persona_text: Any, attributes: Mapping[str, Any]) -> str | None:
    """'<who the persona is> · <topic>', either part alone when the other is unknown; None when both are."""
    parts = [cut(persona_words(attributes, persona_text), WHO_CHARS), cut(_text(topic), TOPIC_CHARS)]
    shown = [p for p in parts if p]
    return SEPARATOR.join(shown) if shown else None


def persona_words(attributes: Mapping[str, Any], persona_text: Any = None) -> str:
    """A persona in a few words: its name when the pool has one (CPED's speakers), else its age, sex and occupation
    ('34-year-old female registered nurse'), else the first words of its short persona or its text."""
    name = _text(attributes.get("name"))
    if name:
        return name
    sex = _text(attributes.get("sex") or attributes.get("gender")).lower()
    job = _text(attributes.get("occupation") or attributes.get("job_title")).replace("_", " ")
    parts = [p for p in (_years(attributes.get("age")), sex, job) if p]
    if len(parts) > 1:
        return " ".join(parts)
    return _text(attributes.get("short_persona")) or _text(persona_text) or " ".join(parts)


def cut(text: str, limit: int) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters (an ellipsis marks the cut)."""
    line = re.sub(r"\s+", " ", text).strip()
    if len(line) <= limit:
        return line
    head = line[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:.") + "\u2026"


def _years(age: Any) -> str:
    """'34-year-old' from an age (a number, or a number as text); empty for anything else."""
    try:
        value = int(float(str(age)))
    except (ValueError, OverflowError):
        return ""
    return f"{value}-year-old" if 0 < value < 130 else ""


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _attributes(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
