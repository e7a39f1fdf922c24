"""The released SpeechEQ layout (docs/method.md) as a pure mapping: metadata.json <-> EqItem <-> table rows.

An item folder is `<root>/<subscale_slug>/<dataset_id>/` with `metadata.json` and `audio/01..08.(mp3|wav)`.
metadata.json keys this module reads, and writes back in the same shape:
- `eq_scale` (required), e.g. "Interpersonal - Empathy" -> Scenario.subscale through `slug_from_eq_scale`.
- `scenario` (required object). Required: title, context, description, speaker1_name, speaker1_role,
  speaker1_gender, speaker2_name, speaker2_role, speaker2_gender (female / male, any case), speaker2_persona_1 (the
  resonant persona), speaker2_persona_2 and speaker2_persona_3 (the two dissonant ones), eq_skill_tested. Optional:
  scenario_valence (Positive / Negative / Conflict, any case; the authors' own items have none, and then it is
  inferred from the scenario text by speech_eq/valence_rules.py, recorded as generation_metadata["valence_source"]),
  target_social_intent (default ""), speaker1_persona
  (default ""), scenario_type (else generation_metadata.scenario_type, else ""), voices (kept in
  generation_metadata["voices"] when non-empty; written from there, {} if none) and speaker2_persona (the
  project's own, written only when non-empty). Other scenario keys are kept in
  generation_metadata["scenario_extra"] and written back.
- `conversation` (required): 6 x {speaker, sentence_number, text}; sentence numbers 1-6 once each; speaker is
  read from "speaker1" / 1 / "Speaker 1" / the speaker's name and written as "speaker1" / "speaker2". Other
  keys (e.g. context_note) are ignored.
- `audio_files` (required): 8 x {sentence_number, speaker, text, eq_level, audio_path, tone_description}. The
  slot is (sentence_number, eq_level): turn 4 high/low -> 04/05, turn 6 high/low -> 07/08, 'high' being the
  resonant (correct) clip. Test turns need eq_level "high" or "low" (any case). Context clips (turns 1, 2, 3, 5 ->
  01, 02, 03, 06) are WRITTEN with `"eq_level": null`; on READ their eq_level is ignored (null, absent or any
  value). An audio_path named NN.<ext> must name its own slot. text defaults to the line, tone_description to "".
- `generation_metadata` (optional object, default {}) <-> EqItem.generation_metadata.
- Any other top-level key is kept in generation_metadata["metadata_extra"] and written back; audio paths published
  under other folders (the authors' data/<batch>/<subscale>/<id>/audio/NN.mp3) in ["published_audio_paths"], and
  context clips' eq_level when set ("high" in the authors' items) in ["context_eq_levels"].
Audio paths are written as "audio/NN.<ext>" with the clip's own extension (.mp3 or .wav).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from eyt_dagster.speech_eq.item_types import Clip, EqItem, Line, Scenario, Speaker
from eyt_dagster.speech_eq.valence_rules import infer_valence
from eyt_dagster.speech_eq.vocabulary import AUDIO_FILES, SUBSCALES, TURN_SPEAKER, eq_scale, slug_from_eq_scale

AUDIO_EXTENSIONS: tuple[str, ...] = (".mp3", ".wav")
SLOTS: dict[tuple[int, str | None], str] = {slot: number for number, slot in AUDIO_FILES.items()}
ROLE: dict[str | None, str] = {None: "context", "high": "resonant", "low": "dissonant"}
# file number -> column stem in speech.eq_items (turnN_path / turnN_tone, turn4_resonant_path, ...)
COLUMN: dict[str, str] = {n: f"turn{t}" + (f"_{ROLE[lvl]}" if lvl else "") for n, (t, lvl) in AUDIO_FILES.items()}
_REQUIRED = (
    "title",
    "context",
    "description",
    "speaker1_name",
    "speaker1_role",
    "speaker1_gender",
    "speaker2_name",
    "speaker2_role",
    "speaker2_gender",
    "speaker2_persona_1",
    "speaker2_persona_2",
    "speaker2_persona_3",
    "eq_skill_tested",
)
_KNOWN = set(_REQUIRED) | {
    "speaker1_persona",
    "speaker2_persona",
    "scenario_type",
    "voices",
    "scenario_valence",
    "target_social_intent",
}
# metadata.json's own keys; any other top-level key is kept in generation_metadata["metadata_extra"] and written back
_TOP_LEVEL = {"eq_scale", "scenario", "conversation", "audio_files", "generation_metadata"}


class LayoutError(ValueError):
    """Metadata (or a stored row) that does not fit the released layout; the message names folder and field."""


def _fail(folder: str, field: str, problem: str) -> NoReturn:
    raise LayoutError(f"{folder}: {field}: {problem}")


def _get(obj: Mapping[str, Any], key: str, folder: str, where: str = "") -> Any:
    if key not in obj or obj[key] is None:
        _fail(folder, where + key, "missing")
    return obj[key]


def _build(model: type[BaseModel], folder: str, field: str, **values: Any) -> Any:
    try:
        return model(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        _fail(folder, f"{field}.{loc}" if loc else field, first["msg"])


def _text(value: Any) -> str:
    """A stored text cell as str: None and NaN (pandas' missing value) become ''."""
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def _turn(value: Any, folder: str, field: str) -> int:
    if isinstance(value, bool) or not re.fullmatch(r"\s*[1-6]\s*", str(value)):
        _fail(folder, field, f"sentence number {value!r} is not 1-6")
    return int(value)


def _speaker(value: Any, names: tuple[str, str], folder: str, field: str) -> int:
    text = re.sub(r"[\s_]", "", str(value)).lower()
    for number, name in ((1, names[0]), (2, names[1])):
        if text in (str(number), f"speaker{number}") or (name and text == re.sub(r"[\s_]", "", name).lower()):
            return number
    _fail(folder, field, f"speaker {value!r} is neither speaker1 nor speaker2")


def audio_entries(metadata: Mapping[str, Any], folder: str) -> dict[str, dict[str, Any]]:
    """The `audio_files` entries by file number ('01'..'08'), checked against the file slots."""
    entries = _get(metadata, "audio_files", folder)
    if not isinstance(entries, list) or len(entries) != len(AUDIO_FILES):
        _fail(folder, "audio_files", f"needs {len(AUDIO_FILES)} entries")
    slots: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(entries):
        where = f"audio_files[{i}]."
        if not isinstance(entry, dict):
            _fail(folder, where[:-1], "not an object")
        turn = _turn(_get(entry, "sentence_number", folder, where), folder, where + "sentence_number")
        level = None
        if turn not in (1, 2, 3, 5):
            level = str(entry.get("eq_level") or "").strip().lower()
            if level not in ("high", "low"):
                _fail(folder, where + "eq_level", f"turn {turn} needs 'high' or 'low', got {entry.get('eq_level')!r}")
        number = SLOTS[(turn, level)]
        if number in slots:
            _fail(folder, where + "sentence_number", f"a second clip for slot {number} (turn {turn}, {level})")
        path = entry.get("audio_path")
        if path is not None and not isinstance(path, str):
            _fail(folder, where + "audio_path", "not a string")
        stem = PurePosixPath((path or "").replace("\\", "/")).stem
        if re.fullmatch(r"\d\d", stem) and stem != number:
            _fail(folder, where + "audio_path", f"file {stem} does not hold turn {turn} ({level}), slot {number} does")
        slots[number] = entry
    return slots


def _scenario(sc: Any, subscale: str, gm: dict[str, Any], folder: str) -> Scenario:
    """The Scenario of metadata['scenario']; unmodelled keys (voices, others) go into gm."""
    if not isinstance(sc, dict):
        _fail(folder, "scenario", "not a JSON object")
    s = {key: _get(sc, key, folder, "scenario.") for key in _REQUIRED}
    if extra := {key: value for key, value in sc.items() if key not in _KNOWN}:
        gm["scenario_extra"] = extra
    if sc.get("voices"):
        gm["voices"] = sc["voices"]
    speakers = [
        _build(
            Speaker,
            folder,
            f"scenario.speaker{n}",
            name=s[f"speaker{n}_name"],
            role=s[f"speaker{n}_role"],
            gender=str(s[f"speaker{n}_gender"]).strip().lower(),
            persona=str(sc.get(f"speaker{n}_persona") or ""),
        )
        for n in (1, 2)
    ]
    published = str(sc.get("scenario_valence") or "").strip()
    if published:
        valence = published.capitalize()
    else:  # the authors' own items state none: inferred, and said so beside the item
        valence, gm["valence_source"] = infer_valence(
            s["title"], s["context"], s["description"], str(sc.get("target_social_intent") or "")
        )
    return _build(
        Scenario,
        folder,
        "scenario",
        subscale=subscale,
        valence=valence,
        scenario_type=str(sc.get("scenario_type") or gm.get("scenario_type") or ""),
        title=s["title"],
        context=s["context"],
        description=s["description"],
        speaker1=speakers[0],
        speaker2=speakers[1],
        resonant_persona=s["speaker2_persona_1"],
        dissonant_personas=[s["speaker2_persona_2"], s["speaker2_persona_3"]],
        skill_tested=s["eq_skill_tested"],
        target_social_intent=str(sc.get("target_social_intent") or ""),
    )


def _lines(raw: Any, names: tuple[str, str], folder: str) -> dict[int, Line]:
    if not isinstance(raw, list) or len(raw) != 6 or not all(isinstance(x, dict) for x in raw):
        _fail(folder, "conversation", "needs 6 turns as {speaker, sentence_number, text} objects")
    lines: dict[int, Line] = {}
    for i, entry in enumerate(raw):
        where = f"conversation[{i}]."
        turn = _turn(_get(entry, "sentence_number", folder, where), folder, where + "sentence_number")
        if turn in lines:
            _fail(folder, where + "sentence_number", f"turn {turn} appears twice")
        speaker = _speaker(_get(entry, "speaker", folder, where), names, folder, where + "speaker")
        text = _get(entry, "text", folder, where)
        lines[turn] = _build(Line, folder, where[:-1], turn=turn, speaker=speaker, text=text)
    return lines


def metadata_to_item(metadata: dict[str, Any], folder_name: str, source: str, clip_paths: dict[str, str]) -> EqItem:
    """One EqItem from a parsed metadata.json; clip_paths maps '01'..'08' to the resolved audio files."""
    folder = folder_name
    if not isinstance(metadata, dict):
        _fail(folder, "metadata.json", "not a JSON object")
    scale = str(_get(metadata, "eq_scale", folder))
    try:
        subscale = slug_from_eq_scale(scale)
    except ValueError as exc:
        _fail(folder, "eq_scale", str(exc))
    gm = metadata.get("generation_metadata") or {}
    if not isinstance(gm, dict):
        _fail(folder, "generation_metadata", "not a JSON object")
    gm = dict(gm)
    if extra := {key: value for key, value in metadata.items() if key not in _TOP_LEVEL}:
        gm["metadata_extra"] = extra
    scenario = _scenario(_get(metadata, "scenario", folder), subscale, gm, folder)
    names = (scenario.speaker1.name, scenario.speaker2.name)
    lines = _lines(_get(metadata, "conversation", folder), names, folder)
    entries = audio_entries(metadata, folder)
    # kept as published: audio paths under the authors' own folders (data/<batch>/<subscale>/<id>/audio/NN.mp3) and
    # the eq_level the release gives context clips (the layout itself needs neither)
    paths = {
        n: e["audio_path"] for n, e in entries.items() if e.get("audio_path") and "/" in e["audio_path"].strip("/")
    }
    if prefixed := {n: p for n, p in paths.items() if not re.fullmatch(r"audio/\d\d\.\w+", p)}:
        gm["published_audio_paths"] = prefixed
    if levels := {n: e["eq_level"] for n, e in entries.items() if AUDIO_FILES[n][1] is None and e.get("eq_level")}:
        gm["context_eq_levels"] = levels
    clips = []
    for number, entry in sorted(entries.items()):
        turn, level = AUDIO_FILES[number]
        where = f"audio_files {number}"
        if "speaker" in entry and _speaker(entry["speaker"], names, folder, where + ".speaker") != TURN_SPEAKER[turn]:
            _fail(folder, where + ".speaker", f"turn {turn} is spoken by speaker {TURN_SPEAKER[turn]}")
        if number not in clip_paths:
            _fail(folder, where + ".audio_path", "no clip file")
        clips.append(
            _build(
                Clip,
                folder,
                where,
                file_number=number,
                turn=turn,
                speaker=TURN_SPEAKER[turn],
                text=str(entry.get("text") or lines[turn].text),
                eq_level=level,
                path=str(clip_paths[number]),
                tone_description=str(entry.get("tone_description") or ""),
            )
        )
    return _build(
        EqItem,
        folder,
        "item",
        dataset_id=folder,
        scenario=scenario,
        conversation=[lines[t] for t in sorted(lines)],
        clips=clips,
        source=source,
        generation_metadata=gm,
    )


def clip_extension(clip: Clip) -> str:
    """The clip's audio extension, '.mp3' or '.wav'; LayoutError for anything else."""
    ext = PurePosixPath(clip.path.replace("\\", "/")).suffix.lower()
    if ext not in AUDIO_EXTENSIONS:
        raise LayoutError(f"clip {clip.file_number}: path: '{clip.path}' is not an .mp3 or .wav file")
    return ext


def item_to_metadata(item: EqItem) -> dict[str, Any]:
    """The released metadata.json of an item, with relative audio paths audio/NN.<ext>."""
    sc, gm = item.scenario, item.generation_metadata
    scenario: dict[str, Any] = dict(gm.get("scenario_extra") or {})
    scenario.update(
        title=sc.title,
        context=sc.context,
        description=sc.description,
        scenario_type=sc.scenario_type,
        scenario_valence=sc.valence,
        speaker1_name=sc.speaker1.name,
        speaker1_role=sc.speaker1.role,
        speaker1_gender=sc.speaker1.gender,
        speaker1_persona=sc.speaker1.persona,
        speaker2_name=sc.speaker2.name,
        speaker2_role=sc.speaker2.role,
        speaker2_gender=sc.speaker2.gender,
        speaker2_persona_1=sc.resonant_persona,
        speaker2_persona_2=sc.dissonant_personas[0],
        speaker2_persona_3=sc.dissonant_personas[1],
        eq_skill_tested=sc.skill_tested,
        target_social_intent=sc.target_social_intent,
        voices=gm.get("voices") or {},
    )
    if sc.speaker2.persona:
        scenario["speaker2_persona"] = sc.speaker2.persona
    return {
        **dict(gm.get("metadata_extra") or {}),
        "scenario": scenario,
        "conversation": [
            {"speaker": f"speaker{line.speaker}", "sentence_number": line.turn, "text": line.text}
            for line in item.conversation
        ],
        "eq_scale": eq_scale(item.subscale),
        "audio_files": [
            {
                "sentence_number": c.turn,
                "speaker": f"speaker{c.speaker}",
                "text": c.text,
                "eq_level": c.eq_level,
                "audio_path": f"audio/{c.file_number}{clip_extension(c)}",
                "tone_description": c.tone_description,
            }
            for c in sorted(item.clips, key=lambda c: c.file_number)
        ],
        "generation_metadata": dict(gm),
    }


def item_rows(item: EqItem) -> dict[str, Any]:
    """One speech.eq_items row; besides the listed columns it carries the context tones (turn1_tone, turn2_tone,
    turn3_tone, turn5_tone) and generation_metadata_json, so `item_from_rows` restores the item exactly."""
    row: dict[str, Any] = {
        "dataset_id": item.dataset_id,
        "subscale": item.subscale,
        "composite": SUBSCALES[item.subscale][0],
        "valence": item.scenario.valence,
        "scenario_type": item.scenario.scenario_type,
        "scenario_title": item.scenario.title,
        "scenario_json": item.scenario.model_dump_json(),
        "conversation_json": json.dumps([line.model_dump() for line in item.conversation], ensure_ascii=False),
    }
    for clip in sorted(item.clips, key=lambda c: c.file_number):
        row[f"{COLUMN[clip.file_number]}_path"] = clip.path
        row[f"{COLUMN[clip.file_number]}_tone"] = clip.tone_description
    row.update({f"turn{line.turn}_text": line.text for line in item.conversation})
    row.update(source=item.source, generation_metadata_json=json.dumps(item.generation_metadata, sort_keys=True))
    return row


def clip_rows(item: EqItem) -> list[dict[str, Any]]:
    """The eight speech.tts_clips rows of an item."""
    return [
        {
            "dataset_id": item.dataset_id,
            "file_number": c.file_number,
            "turn": c.turn,
            "speaker": c.speaker,
            "eq_level": c.eq_level,
            "role": ROLE[c.eq_level],
            "text": c.text,
            "tone_description": c.tone_description,
            "path": c.path,
        }
        for c in sorted(item.clips, key=lambda c: c.file_number)
    ]


def item_from_rows(row: Mapping[str, Any]) -> EqItem:
    """The EqItem of a speech.eq_items row (the inverse of `item_rows`); clip texts are the line texts."""
    folder = str(row.get("dataset_id", "?"))
    try:
        scenario = Scenario.model_validate_json(_get(row, "scenario_json", folder))
        lines = [Line.model_validate(x) for x in json.loads(_get(row, "conversation_json", folder))]
        gm = _text(row.get("generation_metadata_json"))
        clips = [
            Clip(
                file_number=n,
                turn=t,
                speaker=TURN_SPEAKER[t],
                text=str(_get(row, f"turn{t}_text", folder)),
                eq_level=lvl,
                path=str(_get(row, f"{COLUMN[n]}_path", folder)),
                tone_description=_text(row.get(f"{COLUMN[n]}_tone")),
            )
            for n, (t, lvl) in AUDIO_FILES.items()
        ]
        return EqItem(
            dataset_id=folder,
            scenario=scenario,
            conversation=lines,
            clips=clips,
            source=_text(row.get("source")) or "generated",
            generation_metadata=json.loads(gm) if gm else {},
        )
    except LayoutError:
        raise
    except (ValidationError, ValueError, TypeError) as exc:
        raise LayoutError(f"{folder}: eq_items row: {exc}") from exc
