"""Which slate settings each asset reads, as plain data, so a changed setting makes exactly the results that
read it stale (docs/operations.md has the table and the reasons).

Two kinds of settings:
* slate-wide and role-wide ones (`seed`, `t_max`, the simulator, the judges...): `asset_settings(asset, slate)`
  gives the values an asset reads; their hash goes into the asset's code version (eyt_dagster/settings_sources.py).
* per-partition ones (a target's model settings, a pool's source): `eyt_target_settings`, `speech_target_settings`
  and `pool_settings` give one partition's values; they are the data versions of the observable source assets
  `dialogue/target_settings`, `speech/target_settings` and `dialogue/pool_settings`.

A model's settings are its `answer_settings()` (config.py): what it is reached through, how many calls run at once
and its family are left out, since they do not change an answer. Pure functions, no Dagster.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from eyt_dagster.core.env_settings import data_dir
from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.eyt_bench.annotation_sheet import LABELS_DIR
from eyt_dagster.eyt_bench.prompts import AUDIT_PROMPT_KEY, prompt_hash
from eyt_dagster.eyt_bench.settings import PoolSource
from eyt_dagster.slate import Slate, TargetRef
from eyt_dagster.speech_eq.prompts import language_prompt_hash
from eyt_dagster.speech_eq.settings import TEMPLATE_GENERATOR

# A TargetRef's fields that only SpeechEQ reads.
SPEECH_TARGET_FIELDS = ("speech_input", "audio_format", "cascade")


def plain(value: Any) -> Any:
    """The value as JSON gives it back (tuples become lists...), so values read from stored metadata compare
    equal to the slate's."""
    return json.loads(json.dumps(value, default=str))


def fingerprint(value: Any) -> str:
    """A short hash of a JSON-able value (keys sorted)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


def role_settings(ref: ModelRef | None) -> dict[str, Any] | None:
    """A role's model (simulator, judge...): its answer settings and its id, which the rows record."""
    if ref is None:
        return None
    return {"id": ref.id, **{k: v for k, v in ref.answer_settings().items() if k in ModelRef.model_fields}}


def eyt_target_settings(ref: TargetRef) -> dict[str, Any]:
    """What decides a target's EYT-Bench replies (its id is the partition key, so it is not repeated here)."""
    return plain({k: v for k, v in ref.answer_settings().items() if k in ModelRef.model_fields})


def speech_target_settings(ref: TargetRef) -> dict[str, Any]:
    """What decides a target's SpeechEQ choices: its model settings and how it hears the clips."""
    return plain({**eyt_target_settings(ref), **{k: ref.answer_settings()[k] for k in SPEECH_TARGET_FIELDS}})


def voice_target_settings(ref: TargetRef) -> dict[str, Any]:
    """What decides a voice target's dialogues: how it hears (as in SpeechEQ) and, for a target that answers in
    audio, its `audio_out` (left out when unset, so a text-answering target's settings are as they were)."""
    settings = speech_target_settings(ref)
    if ref.audio_out is not None:
        settings["audio_out"] = plain(ref.audio_out.model_dump())
    return settings


def pool_settings(source: PoolSource) -> dict[str, Any]:
    """Where a pool comes from and, when the slate sets one, the language it is played in (left out when unset,
    so a pool played in its corpus's language keeps the settings it had before languages existed)."""
    settings = source.model_dump()
    if settings.get("language") is None:
        settings.pop("language", None)
    return plain(settings)


def _bytes_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def _file(value: str | None) -> dict[str, Any] | None:
    """A file the slate names: its name and, when it is a readable file, a hash of its bytes (an edited CSV is a
    changed setting too)."""
    if value is None:
        return None
    path = Path(value)
    digest = _bytes_digest(path) if path.is_file() else None
    return {"path": value, "sha256": digest}


def _label_store(slate: Slate) -> dict[str, str] | None:
    """The human labels `eyt annotate import` keeps in the data directory (EYT_DATA_DIR, as the code location
    reads it): each file's name and a hash of its bytes, so an import (or a --replace) makes dialogue/human_annotations
    stale; None while the store holds no file (OPTIONAL), so a data directory without labels keeps its code
    versions. Not a slate field: the store belongs to the data directory, whatever slate reads it."""
    folder = data_dir() / LABELS_DIR
    files = sorted(p for p in folder.glob("*.csv") if not p.name.startswith(".")) if folder.is_dir() else []
    return {p.name: _bytes_digest(p) for p in files} or None


def _speech_role(role: Literal["generator", "validator", "tone_judge"]) -> Callable[[Slate], Any]:
    def read(slate: Slate) -> Any:
        ref = slate.speech.text_model(role)
        return role_settings(ref) if ref is not None else TEMPLATE_GENERATOR

    return read


def _audit_model(slate: Slate) -> dict[str, Any] | None:
    """The simulator audit's model check: the model's settings and the hash of its prompt (None without a model, so
    the prompt file is read only when the check runs)."""
    ref = slate.simulator_audit_model
    if ref is None:
        return None
    return {**(role_settings(ref) or {}), "prompt_hash": prompt_hash(AUDIT_PROMPT_KEY)}


def _target_flags(slate: Slate) -> dict[str, dict[str, Any]]:
    """Per target, what the reports print beside its numbers: family, baseline, thinking, self-preference risk."""
    return {
        t.id: {
            "family": t.family,
            "is_baseline": t.is_baseline,
            "thinking": t.thinking,
            "benchmarks": list(t.benchmarks),
            "self_preference_risk": slate.self_preference_risk(t.id),
        }
        for t in slate.targets
    }


def _other_languages(slate: Slate) -> bool:
    """Whether any pool of the slate is played in another language than English: the settings that apply only to
    such pools are read (and enter the assets' settings) only then."""
    return any(slate.pool_language(pool) != DEFAULT_LANGUAGE for pool in slate.pools)


def _speech_language(slate: Slate) -> dict[str, str] | None:
    """A SpeechEQ build's language and its prompt files' hash; None for English (whose files the code versions
    hash), so that English builds keep the settings they had."""
    language = slate.speech.language
    if language == DEFAULT_LANGUAGE:
        return None
    return {"language": language, "prompts": language_prompt_hash(language)}


# Setting name (as a slate path) -> what an asset reads of it.
READERS: dict[str, Callable[[Slate], Any]] = {
    "name": lambda s: s.name,
    "seed": lambda s: s.seed,
    "pool_size": lambda s: s.pool_size,
    "dedup_threshold": lambda s: s.dedup_threshold,
    "embedding_model": lambda s: s.embedding_model,
    "multilingual_embedding_model": lambda s: s.multilingual_embedding_model if _other_languages(s) else None,
    "judge_prompt_language": lambda s: s.judge_prompt_language if _other_languages(s) else None,
    "dialogues_per_pool": lambda s: s.dialogues_per_pool,
    "t_max": lambda s: s.t_max,
    "alpha": lambda s: s.alpha,
    "judge_scale": lambda s: s.judge_scale,
    "judge_combine": lambda s: s.judge_combine,
    "bootstrap_resamples": lambda s: s.bootstrap_resamples,
    "sequential": lambda s: s.sequential.model_dump() if s.sequential is not None else None,
    "repeats": lambda s: s.repeats,
    "judge_repeats": lambda s: s.judge_repeats,
    "thinking_highlight": lambda s: s.thinking_highlight,
    "cross_judge_dialogues": lambda s: s.cross_judge_dialogues,
    "reasoning_pairs": lambda s: [p.model_dump() for p in s.reasoning_pairs],
    "human_annotations": lambda s: _file(s.human_annotations),
    "human_labels": _label_store,
    "min_human_labels": lambda s: s.min_human_labels,
    "simulator": lambda s: role_settings(s.simulator),
    "judges": lambda s: [role_settings(j) for j in s.judges],
    "replacement_judge": lambda s: role_settings(s.replacement_judge),
    "simulator_audit_model": _audit_model,
    "targets": _target_flags,
    "speech.language": _speech_language,
    "speech.generator": _speech_role("generator"),
    "speech.validator": _speech_role("validator"),
    "speech.tone_judge": _speech_role("tone_judge"),
    "speech.items_per_valence": lambda s: s.speech.items_per_valence,
    "speech.valences": lambda s: list(s.speech.valences),
    "speech.bland_words": lambda s: s.speech.bland_words,
    "speech.max_tone_attempts": lambda s: s.speech.max_tone_attempts,
    "speech.tts": lambda s: role_settings(s.speech.tts),
    "voice.tts": lambda s: role_settings(s.voice.tts),
    "voice.dialogues_per_pool": lambda s: s.voice.dialogues_per_pool,
    "speech.contrast": lambda s: s.speech.contrast.model_dump(),
    "speech.contrast_by_engine": lambda s: (
        {k: v.model_dump() for k, v in s.speech.contrast_by_engine.items()} if s.speech.contrast_by_engine else None
    ),
    "speech.source": lambda s: {"source": s.speech.source, "released_path": s.speech.released_path},
    "speech.evaluation": lambda s: s.speech.evaluation.model_dump(exclude={"human_ranking", "seq_cohort"}),
    "speech.evaluation.seq_cohort": lambda s: s.speech.evaluation.seq_cohort,
    "speech.evaluation.human_ranking": lambda s: _file(s.speech.evaluation.human_ranking),
}

# reports that print is_baseline / self_preference_risk beside each target, or that read every cell of the slate's
# targets (a report reads the partitions of the slate's targets only: a target dropped from the slate leaves it)
_FLAGGED = ("targets",)
_JUDGED = ("seed", "judge_scale")  # every judge call: the scale it scores on, the seed it is sent

# Asset (user string) -> the slate-wide settings it reads. An asset not listed reads none.
ASSET_SETTINGS: dict[str, tuple[str, ...]] = {
    "dialogue/persona_pool": (
        "seed",
        "pool_size",
        "dedup_threshold",
        "embedding_model",
        "multilingual_embedding_model",
    ),
    "dialogue/chat_seeds": ("seed", "dialogues_per_pool", "simulator"),
    "dialogue/dialogue_turns": ("seed", "t_max", "simulator"),
    "dialogue/judge_verdicts": (*_JUDGED, "judges", "judge_prompt_language"),
    "dialogue/final_intent_verdicts": (*_JUDGED, "judges", "judge_prompt_language"),
    "dialogue/intent_similarity": ("embedding_model", "multilingual_embedding_model"),
    "dialogue/simulator_audit": ("embedding_model", "simulator_audit_model"),
    "dialogue/dialogue_scores": ("alpha", "judge_combine"),
    "dialogue/repeat_dialogues": ("seed", "t_max", "simulator", "repeats"),
    "dialogue/repeat_scores": (
        *_JUDGED,
        "judges",
        "embedding_model",
        "alpha",
        "judge_combine",
        "repeats",
        "judge_repeats",
    ),
    "dialogue/noise_floor": ("repeats", "judge_repeats", *_FLAGGED),
    "dialogue/pass_k": ("repeats", "judge_repeats", *_FLAGGED),
    "dialogue/leaderboard": ("name", "alpha", "judge_combine", "judges", *_FLAGGED),
    "dialogue/leaderboard_intervals": ("seed", "bootstrap_resamples", *_FLAGGED),
    "dialogue/pairwise_comparisons": ("seed", "bootstrap_resamples", *_FLAGGED),
    "dialogue/rank_intervals": ("seed", "bootstrap_resamples", *_FLAGGED),
    "dialogue/corrected_rank_intervals": ("seed", "bootstrap_resamples", *_FLAGGED),
    "dialogue/corrected_pairwise": _FLAGGED,
    "dialogue/sequential_decisions": ("seed", "sequential", *_FLAGGED),
    "dialogue/sequential_savings": ("seed", "sequential", *_FLAGGED),
    "dialogue/simulator_audit_effect": _FLAGGED,
    "dialogue/alpha_sensitivity": ("alpha", "judge_combine", *_FLAGGED),
    "dialogue/turn_curves": ("judge_combine", *_FLAGGED),
    "dialogue/trajectory": _FLAGGED,
    "dialogue/persona_source_comparison": _FLAGGED,
    "dialogue/thinking_ablation": ("reasoning_pairs", "thinking_highlight", *_FLAGGED),
    "dialogue/judge_agreement": ("judges", *_FLAGGED),
    "dialogue/cross_judge_verdicts": (
        *_JUDGED,
        "cross_judge_dialogues",
        "replacement_judge",
        "judge_prompt_language",
        *_FLAGGED,
    ),
    "dialogue/cross_judge_final_verdicts": (
        *_JUDGED,
        "cross_judge_dialogues",
        "replacement_judge",
        "judge_prompt_language",
        *_FLAGGED,
    ),
    "dialogue/cross_judge_ablation": (
        "seed",
        "cross_judge_dialogues",
        "judge_combine",
        "judges",
        "replacement_judge",
        *_FLAGGED,
    ),
    "dialogue/human_annotations": ("human_annotations", "human_labels"),
    "dialogue/human_alignment": ("judge_combine", "judges", *_FLAGGED),
    "dialogue/judge_corrected": ("alpha", "min_human_labels", *_FLAGGED),
    "speech/scenarios": (
        "seed",
        "speech.generator",
        "speech.valences",
        "speech.items_per_valence",
        "speech.source",
        "speech.language",
    ),
    "speech/dialogues": ("seed", "speech.generator", "speech.validator", "speech.language"),
    "speech/tone_instructions": (
        "seed",
        "speech.generator",
        "speech.bland_words",
        "speech.max_tone_attempts",
        "speech.language",
    ),
    "speech/tone_selection": ("seed", "speech.generator", "speech.tone_judge", "speech.language"),
    "speech/tts_clips": (
        "speech.tts",
        "speech.contrast",
        "speech.contrast_by_engine",
        "speech.source",
        "speech.language",
    ),
    "speech/contrast_scores": (
        "speech.tts",
        "speech.contrast",
        "speech.contrast_by_engine",
        "speech.source",
        "speech.language",
    ),
    "speech/eq_items": (
        "speech.tts",
        "speech.contrast",
        "speech.contrast_by_engine",
        "speech.source",
        "speech.language",
    ),
    "speech/import_skips": (
        "speech.tts",
        "speech.contrast",
        "speech.contrast_by_engine",
        "speech.source",
        "speech.language",
    ),
    "speech/slm_choices": ("seed", "speech.evaluation", "speech.contrast", "speech.language"),
    "speech/seq_leaderboard": ("seed", "bootstrap_resamples", "speech.evaluation.seq_cohort", *_FLAGGED),
    "speech/seq_breakdown": ("seed", "bootstrap_resamples", *_FLAGGED),
    "speech/seq_human_alignment": ("speech.evaluation.human_ranking", "speech.evaluation.seq_cohort", *_FLAGGED),
    "voice/voiced_turns": ("seed", "t_max", "simulator", "voice.tts", "voice.dialogues_per_pool"),
    "voice/text_turns": ("seed", "t_max", "simulator", "voice.dialogues_per_pool"),
    "voice/judge_verdicts": (*_JUDGED, "judges", "judge_prompt_language"),
    "voice/final_intent_verdicts": (*_JUDGED, "judges", "judge_prompt_language"),
    "voice/dialogue_scores": ("embedding_model", "multilingual_embedding_model", "alpha", "judge_combine"),
    "voice/voice_gap": ("seed", "bootstrap_resamples", *_FLAGGED),
    "voice/asr_errors": _FLAGGED,
    "voice/prosody_probe": ("seed", "voice.tts", "voice.dialogues_per_pool"),
    "voice/prosody_effect": ("seed", "bootstrap_resamples", *_FLAGGED),
    "reports/model_cards": ("name", "seed", "bootstrap_resamples", *_FLAGGED),
    "reports/paper_tables": ("name", "seed"),
}

# Slate fields no asset reads as a setting: checked when the slate loads, read through the partitions
# (pools: dialogue/pool_settings; targets: the target_settings sources and the `targets` flags), or read by an
# asset check only (max_unfinished_fraction: a changed threshold judges the next run, it changes no row), or read by
# the planning of runs only (attempts_per_day: how often a failing partition is run again), or by the model calls
# only (budget: a spend cap decides whether a call is sent, never what it answers).
NOT_READ = frozenset(
    {
        "budget",
        "allow_same_family",
        "pools",
        "speech.models",
        "speech.released_path",
        "max_unfinished_fraction",
        "attempts_per_day",
        "speech.max_skipped_fraction",
    }
)


# Optional settings added after results existed: left out of an asset's settings while unset, so their arrival leaves
# the code version (and every result) of a slate that does not set them as it was.
OPTIONAL = frozenset(
    {
        "sequential",
        "simulator_audit_model",
        "multilingual_embedding_model",
        "judge_prompt_language",
        "speech.language",
        "speech.contrast_by_engine",
        "human_labels",
    }
)


def asset_settings(asset: str, slate: Slate) -> dict[str, Any]:
    """The slate-wide settings `asset` reads, by name (an unset OPTIONAL one left out)."""
    values = {name: READERS[name](slate) for name in ASSET_SETTINGS.get(asset, ())}
    return plain({name: v for name, v in values.items() if v is not None or name not in OPTIONAL})


def changed_paths(old: Any, new: Any, path: str = "") -> list[str]:
    """Dotted paths where two settings values differ. Lists of models are compared by id ('judges.j2.model');
    other lists whole. A key present on one side only is reported with '(added)' or '(removed)'."""
    if old == new:
        return []
    if isinstance(old, list) and isinstance(new, list) and all(isinstance(x, Mapping) and "id" in x for x in old + new):
        return changed_paths({x["id"]: x for x in old}, {x["id"]: x for x in new}, path)
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        found = []
        for key in sorted(set(old) | set(new), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in old:
                found.append(f"{where} (added)")
            elif key not in new:
                found.append(f"{where} (removed)")
            else:
                found += changed_paths(old[key], new[key], where)
        return found
    return [path or "(value)"]


def change_text(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Why an asset's slate-wide settings differ, e.g. 'slate settings changed: t_max; simulator settings changed:
    temperature'; '' when they do not. Names come from the top level of `changed_paths`."""
    scalars: list[str] = []
    nested: dict[str, list[str]] = {}
    for where in changed_paths(dict(old), dict(new)):
        top = next(
            (
                name
                for name in sorted(set(old) | set(new), key=len, reverse=True)
                if where == name or where.startswith(name + ".") or where.startswith(name + " ")
            ),
            where,
        )
        rest = where[len(top) :].lstrip(".").strip()
        if rest and not rest.startswith("("):
            nested.setdefault(top, []).append(rest)
        else:
            scalars.append(where)
    parts = [f"slate settings changed: {', '.join(scalars)}"] if scalars else []
    parts += [f"{top} settings changed: {', '.join(fields)}" for top, fields in nested.items()]
    return "; ".join(parts)


def partition_change_text(kind: str, key: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str:
    """Why one target's or pool's settings differ, e.g. 'target tgt-a settings changed: temperature'."""
    if new is None:
        return f"{kind} {key} is not in the slate"
    fields = changed_paths(dict(old), dict(new)) if old is not None else []
    return f"{kind} {key} settings changed" + (f": {', '.join(fields)}" if fields else "")
