"""Persona pools (paper §3.2 and App. B; docs/method.md#persona-pools): the two public schemas to PersonaRecords,
near-duplicate removal and seeded (stratified) sampling.

Pure logic: functions take DataFrames and embedding matrices. Reading files or the hub is
`resources/datasets/persona_sources.py`; the sentence encoder is `resources/text/embeddings.py`.

Project decisions recorded here (the paper gives none of them):
- `OCCUPATION_GROUPS`: Nemotron's snake_case `occupation` code -> one of ten groups, by keyword rules.
- `age_bucket`: 18-29, 30-44, 45-59, 60+.
- length buckets: Nemotron by the word count of its `persona` column, PersonaMem-v2 by the token count of
  the 32k chat history (the long-context part of that pool).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from eyt_dagster.eyt_bench.taxonomy import NEMOTRON_POOL, PERSONAMEM_POOL
from eyt_dagster.eyt_bench.types import PersonaRecord

NEMOTRON_SCHEMA = "Nemotron-Personas-USA"
PERSONAMEM_SCHEMA = "PersonaMem-v2"

# The columns of the public Nemotron-Personas-USA release (nvidia/Nemotron-Personas-USA on the hub).
NEMOTRON_COLUMNS: tuple[str, ...] = (
    "uuid",
    "professional_persona",
    "sports_persona",
    "arts_persona",
    "travel_persona",
    "culinary_persona",
    "persona",
    "cultural_background",
    "skills_and_expertise",
    "skills_and_expertise_list",
    "hobbies_and_interests",
    "hobbies_and_interests_list",
    "career_goals_and_ambitions",
    "sex",
    "age",
    "marital_status",
    "education_level",
    "bachelors_field",
    "occupation",
    "city",
    "state",
    "zipcode",
    "country",
)
# The subset the records are built from; a loader may read only these (plus any Big-Five columns).
NEMOTRON_RECORD_COLUMNS: tuple[str, ...] = (
    "uuid",
    "persona",
    "skills_and_expertise_list",
    "hobbies_and_interests_list",
    "sex",
    "age",
    "marital_status",
    "education_level",
    "bachelors_field",
    "occupation",
    "city",
    "state",
)
# Only an extended release carries these; they are copied into attributes when present.
BIG_FIVE_COLUMNS: tuple[str, ...] = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")

# The columns of PersonaMem-v2's benchmark/text/*.csv that the records are built from.
PERSONAMEM_COLUMNS: tuple[str, ...] = (
    "persona_id",
    "short_persona",
    "expanded_persona",
    "topic_query",
    "topic_preference",
    "pref_type",
    "conversation_scenario",
    "total_tokens_in_chat_history_32k",
)

# Occupation groups: the first group (in this order) with a keyword that starts any "_"-separated word of
# the code wins, e.g. "registered_nurse" -> healthcare, "sales_manager" -> sales_service, "web_developer"
# -> stem. Order matters: not_working and healthcare come first so "nursing_assistant" is healthcare and
# "retired_teacher" is not_working; business_finance comes last because its words ("manager",
# "assistant") are the least specific. Codes matching nothing are "other". A heuristic, not a census
# crosswalk: it only has to give strata of comparable jobs.
OCCUPATION_GROUPS: dict[str, tuple[str, ...]] = {
    "not_working": ("unemployed", "retired", "student", "homemaker", "workforce", "jobless"),
    "healthcare": (
        "nurs",
        "physician",
        "doctor",
        "surgeon",
        "dentist",
        "dental",
        "pharmac",
        "therapist",
        "medical",
        "health",
        "paramedic",
        "emt",
        "veterinar",
        "clinical",
        "optometr",
        "psychiatr",
        "hygienist",
        "caregiver",
    ),
    "education": ("teach", "professor", "instructor", "tutor", "educat", "librar", "principal"),
    "public_legal_social": (
        "police",
        "correction",
        "firefight",
        "sheriff",
        "military",
        "soldier",
        "lawyer",
        "attorney",
        "paralegal",
        "legal",
        "judge",
        "social",
        "counselor",
        "clergy",
        "government",
        "postal",
    ),
    "arts_media": (
        "artist",
        "designer",
        "writer",
        "author",
        "musician",
        "photograph",
        "actor",
        "journalist",
        "editor",
        "reporter",
        "media",
        "entertain",
        "dancer",
        "animator",
    ),
    "stem": (
        "software",
        "developer",
        "engineer",
        "programmer",
        "computer",
        "database",
        "scientist",
        "chemist",
        "physicist",
        "biolog",
        "mathematic",
        "statistic",
        "architect",
        "network",
        "web",
        "laboratory",
    ),
    "sales_service": (
        "sales",
        "retail",
        "cashier",
        "cook",
        "chef",
        "waiter",
        "waitress",
        "server",
        "bartender",
        "food",
        "hair",
        "barber",
        "janitor",
        "cleaner",
        "housekeep",
        "customer",
        "child",
        "guard",
        "restaurant",
        "hotel",
        "fitness",
    ),
    "trades_transport": (
        "construction",
        "electrician",
        "plumber",
        "carpenter",
        "mechanic",
        "driver",
        "truck",
        "laborer",
        "welder",
        "machinist",
        "assembl",
        "production",
        "farm",
        "agricult",
        "landscap",
        "install",
        "repair",
        "warehouse",
        "mover",
        "logistic",
        "pilot",
        "technician",
        "painter",
        "roofer",
    ),
    "business_finance": (
        "manager",
        "accountant",
        "auditor",
        "financ",
        "bank",
        "clerk",
        "secretar",
        "administrat",
        "assistant",
        "receptionist",
        "insurance",
        "analyst",
        "executive",
        "consultant",
        "business",
        "bookkeep",
        "office",
        "real",
        "human",
    ),
}
OTHER_GROUP = "other"

AGE_BUCKETS: tuple[tuple[int, str], ...] = ((29, "18-29"), (44, "30-44"), (59, "45-59"))
NEMOTRON_LENGTH_WORDS = (25, 50)  # persona words: < 25 short, < 50 medium, else long
PERSONAMEM_LENGTH_TOKENS = (20_000, 28_000)  # 32k chat-history tokens: < 20k short, < 28k medium, else long

SCHEMA_HINT = "check that the file is the published layout (see eyt_dagster/fixtures/README.md)"


class PersonaSchemaError(ValueError):
    """A persona file lacks columns its schema requires; the message names the file and the columns."""


def require_columns(columns: Iterable[str], required: Sequence[str], schema: str, where: str) -> None:
    """Raise PersonaSchemaError naming `where` and every required column that `columns` lacks."""
    present = set(columns)
    missing = [c for c in required if c not in present]
    if missing:
        raise PersonaSchemaError(
            f"persona file {where}: missing column(s) {missing} required by the {schema} schema; {SCHEMA_HINT}"
        )


def occupation_group(code: str | None) -> str:
    """Map a Nemotron `occupation` code to its group in OCCUPATION_GROUPS ('other' when none matches)."""
    words = str(code or "").lower().replace("-", "_").replace(" ", "_").split("_")
    for group, keywords in OCCUPATION_GROUPS.items():
        if any(word.startswith(k) for word in words if word for k in keywords):
            return group
    return OTHER_GROUP


def age_bucket(age: Any) -> str:
    """18-29, 30-44, 45-59 or 60+ ('under-18' and 'unknown' for values the release does not hold)."""
    if _is_missing(age):
        return "unknown"
    value = int(age)
    if value < 18:
        return "under-18"
    for upper, label in AGE_BUCKETS:
        if value <= upper:
            return label
    return "60+"


def parse_list(value: Any) -> list[str]:
    """Parse a string holding a Python-style list (the `*_list` columns) safely; junk gives []."""
    if isinstance(value, (list, tuple, np.ndarray)):
        items: Any = list(value)
    elif _is_missing(value) or not str(value).strip():
        return []
    else:
        try:
            items = ast.literal_eval(str(value))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return []
    if not isinstance(items, (list, tuple)):
        return []
    return [str(item).strip() for item in items if str(item).strip()]


def length_bucket(count: int, thresholds: tuple[int, int]) -> str:
    """'short' below the first threshold, 'medium' below the second, else 'long'."""
    return "short" if count < thresholds[0] else "medium" if count < thresholds[1] else "long"


def nemotron_to_records(df: pd.DataFrame, source_name: str) -> list[PersonaRecord]:
    """Nemotron-Personas-USA rows -> PersonaRecords (pool nemotron_usa), sorted by persona_id.

    Needs only NEMOTRON_RECORD_COLUMNS; the loader checks each file against the full NEMOTRON_COLUMNS.
    """
    require_columns(df.columns, NEMOTRON_RECORD_COLUMNS, NEMOTRON_SCHEMA, source_name)
    big_five = [c for c in BIG_FIVE_COLUMNS if c in df.columns]
    records = [_nemotron_record(row, big_five, source_name) for row in df.to_dict(orient="records")]
    return sorted(records, key=lambda r: r.persona_id)


def _nemotron_record(row: dict[str, Any], big_five: list[str], source_name: str) -> PersonaRecord:
    hobbies = parse_list(row["hobbies_and_interests_list"])
    skills = parse_list(row["skills_and_expertise_list"])
    age = None if _is_missing(row["age"]) else int(row["age"])
    attributes: dict[str, Any] = {
        "occupation": _text(row["occupation"]),
        "occupation_group": occupation_group(row["occupation"]),
        "age": age,
        "age_bucket": age_bucket(age),
        "sex": _text(row["sex"]),
        "state": _text(row["state"]),
        "city": _text(row["city"]),
        "education_level": _text(row["education_level"]),
        "bachelors_field": _text(row["bachelors_field"]),
        "marital_status": _text(row["marital_status"]),
    }
    attributes.update({c: _plain(row[c]) for c in big_five if not _is_missing(row[c])})
    persona = _text(row["persona"])
    return PersonaRecord(
        persona_id=_text(row["uuid"]),
        pool=NEMOTRON_POOL,
        source=source_name,
        persona_text=_nemotron_text(persona, attributes, hobbies),
        attributes=attributes,
        topic_tags=_unique([*hobbies, *skills]),
        length_bucket=length_bucket(len(persona.split()), NEMOTRON_LENGTH_WORDS),
    )


def _nemotron_text(persona: str, attrs: dict[str, Any], hobbies: list[str]) -> str:
    """The `persona` sentence plus a short line of who, where and what they enjoy."""
    age = f"{attrs['age']}-year-old" if attrs["age"] is not None else ""
    who = " ".join(p for p in (age, _words(attrs["sex"]).lower(), _words(attrs["occupation"])) if p)
    place = ", ".join(p for p in (attrs["city"], attrs["state"]) if p)
    line = f"{who} in {place}" if who and place else who or (f"Lives in {place}" if place else "")
    parts = [persona, f"{line[:1].upper()}{line[1:]}." if line else ""]
    if hobbies:
        parts.append(f"Enjoys {', '.join(hobbies[:3])}.")
    return " ".join(p for p in parts if p)


def personamem_to_records(benchmark_df: pd.DataFrame, source_name: str) -> list[PersonaRecord]:
    """PersonaMem-v2 benchmark rows (several per persona) -> one PersonaRecord per persona_id."""
    require_columns(benchmark_df.columns, PERSONAMEM_COLUMNS, PERSONAMEM_SCHEMA, source_name)
    df = benchmark_df.dropna(subset=["persona_id"])
    groups = df.groupby(df["persona_id"].map(_persona_key), sort=True)
    records = [_personamem_record(key, group, source_name) for key, group in groups]
    return sorted(records, key=lambda r: r.persona_id)


def _personamem_record(persona_id: str, rows: pd.DataFrame, source_name: str) -> PersonaRecord:
    short = _first(rows["short_persona"])
    profile = _parse_profile(_first(rows["expanded_persona"]))
    most = pd.to_numeric(rows["total_tokens_in_chat_history_32k"], errors="coerce").max()
    tokens = 0 if pd.isna(most) else int(most)
    occupation, demographics = _section(profile, "occupation"), _section(profile, "demographics")
    attributes: dict[str, Any] = {
        "short_persona": short,
        "age": _plain(profile.get("age")),
        "gender": profile.get("gender"),
        "nationality": profile.get("nationality"),
        "job_title": occupation.get("job_title"),
        "industry": occupation.get("industry"),
        "marital_status": demographics.get("marital_status"),
        "pref_types": sorted(_unique(rows["pref_type"])),
        "conversation_scenarios": sorted(_unique(rows["conversation_scenario"])),
        "n_queries": len(rows),
        "chat_history_tokens_32k": tokens,
    }
    return PersonaRecord(
        persona_id=persona_id,
        pool=PERSONAMEM_POOL,
        source=source_name,
        persona_text=personamem_paragraph(short, profile),
        attributes={k: v for k, v in attributes.items() if v not in (None, "", [])},
        topic_tags=sorted(_unique([*rows["topic_query"], *rows["topic_preference"]])),
        length_bucket=length_bucket(tokens, PERSONAMEM_LENGTH_TOKENS),
    )


def personamem_paragraph(short_persona: str, profile: dict[str, Any]) -> str:
    """A paragraph from the short persona and the expanded profile's main fields.

    What tells personas apart (short persona, job, hobbies) comes first and fixed label words are few:
    the encoder reads only the first 256 word pieces, and shared boilerplate would pull distinct
    personas towards the deduplication threshold.
    """
    personality = _section(profile, "personality")
    job = _section(profile, "occupation")
    education = _section(profile, "education")
    style = _section(profile, "speaking_style_to_chatbot")
    who = ", ".join(
        str(v)
        for v in (
            profile.get("name"),
            profile.get("age"),
            profile.get("gender"),
            profile.get("nationality"),
            profile.get("race_ethnicity"),
        )
        if v
    )
    work = "; ".join(str(v) for v in (job.get("job_title"), job.get("industry"), education.get("highest_degree")) if v)
    sentences = [
        short_persona.rstrip(".") + "." if short_persona else "",
        _listed("Hobbies", personality.get("hobbies")),
        f"{work}." if work else "",
        f"{who}." if who else "",
        _listed("Traits", personality.get("traits")),
        _listed("Values", personality.get("values")),
        _listed("Speaks", profile.get("languages_spoken")),
        f"Tone with a chatbot: {style['tone']}." if style.get("tone") else "",
        str(profile.get("text", "")).strip(),
    ]
    return " ".join(s for s in sentences if s)


def _parse_profile(raw: str) -> dict[str, Any]:
    """The `expanded_persona` column: a JSON object; plain text is kept under 'text'."""
    if not raw:
        return {}
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return {"text": raw}


# --- small helpers ----------------------------------------------------------------------------------


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars, so attributes serialise as plain JSON."""
    return value.item() if isinstance(value, np.generic) else value


def _text(value: Any) -> str:
    return "" if _is_missing(value) else str(value).strip()


def _words(code: str) -> str:
    return code.replace("_", " ").strip()


def _unique(values: Iterable[Any]) -> list[str]:
    """Non-empty stripped strings, first occurrence kept, in order."""
    seen: dict[str, None] = {}
    for value in values:
        text = _text(value)
        if text:
            seen.setdefault(text, None)
    return list(seen)


def _first(values: pd.Series) -> str:
    present = [v for v in values if _text(v)]
    return _text(present[0]) if present else ""


def _persona_key(value: Any) -> str:
    """PersonaMem ids are integers that CSV readers may give as 3, '3' or 3.0: normalise to '3'."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _section(profile: dict[str, Any], key: str) -> dict[str, Any]:
    value = profile.get(key)
    return value if isinstance(value, dict) else {}


def _listed(label: str, values: Any) -> str:
    if isinstance(values, list) and values:
        return f"{label}: {', '.join(str(v) for v in values)}."
    return ""
