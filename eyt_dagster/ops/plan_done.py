"""What `eyt plan` counts as already done, read from the warehouse's Parquet files (read-only): the dialogues of each
EYT-Bench cell and spoken EYT-Bench cell already played, each pool's ChatSEEDs already written, each SpeechEQ
target's share of an evaluation still to do and each subscale's scenarios already built with today's text models
and prompts. A rerun answers all of that from the call cache, so it costs nothing (docs/cost.md).

`eyt plan --refresh` starts from the same figures and changes them by what `eyt refresh` would run
(eyt_dagster/ops/plan_refresh.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from eyt_dagster.slate import Slate
from eyt_dagster.speech_eq.vocabulary import SUBSCALES

if TYPE_CHECKING:
    import pandas as pd

# SpeechEQ's text stages in build order: the table, its key in the stage's prompt hashes (assets/speech_eq/
# text_stages.py PROMPTS) and the call kinds (ledger purpose prefixes) the stage makes.
SPEECH_STAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("speech.scenarios", "scenarios", ("speech_scenario",)),
    ("speech.dialogues", "dialogues", ("speech_dialogue", "speech_dialogue_check")),
    ("speech.tone_instructions", "tone_instructions", ("speech_tone",)),
    ("speech.tone_selection", "tone_selection", ("speech_tone_selection",)),
)
SPEECH_BUILD_KINDS = tuple(kind for _, _, kinds in SPEECH_STAGES for kind in kinds)

Cell = tuple[str, str]  # (target, pool)


@dataclass(frozen=True)
class Selection:
    """What `eyt run` would play (eyt_dagster/ops/cli.py `selection`; `eyt plan` and `eyt refresh` estimate it)."""

    targets: list[str]
    pools: list[str]
    speech_targets: list[str]
    voice_targets: list[str]
    speech: bool = True  # False: --no-speech, no SpeechEQ item build either
    subscales: list[str] = field(default_factory=lambda: sorted(SUBSCALES))  # whose SpeechEQ items are built


@dataclass
class Done:
    """What a command would not have to pay for again.

    played: per EYT-Bench cell, its ChatSEEDs played (dialogues with no error row); seeds: per pool, its ChatSEEDs
    written; design: per pool, the ChatSEEDs its design plays; speech_left: per remote SpeechEQ target, the share of
    one evaluation still to do; built: per subscale and build call kind, the scenarios built; voiced: per spoken
    EYT-Bench cell, its ChatSEEDs played heard and as the text control; rejudge: per EYT-Bench cell, the dialogues
    judged (or audited) again without being played again, per call kind (`eyt refresh` after a judge's prompt
    changed); probe_share: the share of answered user turns whose gold emotion is not neutral (the prosody probe
    perceives those again)."""

    played: dict[Cell, int] = field(default_factory=dict)
    seeds: dict[str, int] = field(default_factory=dict)
    design: dict[str, int] = field(default_factory=dict)
    speech_left: dict[str, float] = field(default_factory=dict)
    built: dict[str, dict[str, int]] = field(default_factory=dict)
    voiced: dict[Cell, tuple[int, int]] = field(default_factory=dict)
    rejudge: dict[Cell, dict[str, int]] = field(default_factory=dict)
    probe_share: float = 1.0


def _partition(table: str, keys: Mapping[str, str | Sequence[str]], warehouse: Path) -> pd.DataFrame:
    """One partition's rows of a warehouse table; empty when it has no file (or cannot be read)."""
    import pandas as pd

    from resources.storage.warehouse import read_partition

    try:
        return read_partition(table, dict(keys), path=warehouse)
    except Exception:
        return pd.DataFrame()


def _finished(turns: pd.DataFrame) -> int:
    """The ChatSEEDs of a turns table with no error row."""
    if turns.empty or "seed_id" not in turns:
        return 0
    failed = set(turns.loc[turns["error"].notna(), "seed_id"]) if "error" in turns else set()
    return len(set(turns["seed_id"]) - failed)


def played_dialogues(target: str, pool: str, warehouse: Path) -> int:
    """Dialogues of the cell already in dialogue_turns with no error row: a rerun answers them from the call
    cache. 0 when the table has no file for the cell (or cannot be read)."""
    return _finished(_partition("dialogue.dialogue_turns", {"target": target, "pool": pool}, warehouse))


def voice_played(target: str, pool: str, warehouse: Path) -> tuple[int, int]:
    """A spoken EYT-Bench cell's ChatSEEDs already played with no error row: heard (voiced_turns) and read (the
    text control, text_turns)."""
    keys = {"target": target, "pool": pool}
    return (
        _finished(_partition("voice.voiced_turns", keys, warehouse)),
        _finished(_partition("voice.text_turns", keys, warehouse)),
    )


def pool_seeds(pool: str, per_pool: int, warehouse: Path) -> tuple[int, int]:
    """A pool's ChatSEEDs: (those already built with no error, which a rerun answers from the call cache; those its
    design plays). The design is `per_pool` (the slate's dialogues_per_pool), fewer when the pool holds fewer
    personas: every row of chat_seeds when it is built, failed ones too, else the rows of persona_pool."""
    seeds = _partition("dialogue.chat_seeds", {"pool": pool}, warehouse)
    if not seeds.empty and "seed_id" in seeds:
        built = int(seeds["error"].isna().sum()) if "error" in seeds else len(seeds)
        return built, min(per_pool, len(seeds))
    personas = _partition("dialogue.persona_pool", {"pool": pool}, warehouse)
    return 0, min(per_pool, len(personas)) if not personas.empty else per_pool


def speech_left(target: str, warehouse: Path) -> float:
    """The share of a SpeechEQ target's evaluation still to do: 1 when slm_choices has no row of it, else its
    error rows' share (a rerun asks again for exactly those; the rest come from the call cache)."""
    choices = _partition("speech.slm_choices", {"target": target}, warehouse)
    if choices.empty:
        return 1.0
    return float(choices["error"].notna().mean()) if "error" in choices else 0.0


def speech_scenarios(slate: Slate) -> int:
    """The scenarios the item build makes per subscale: `items_per_valence` per valence; none when the items are
    imported from the released layout (no text model is called)."""
    speech = slate.speech
    return 0 if speech.source == "released" else len(speech.valences) * speech.items_per_valence


def speech_built(subscale: str, slate: Slate, warehouse: Path) -> dict[str, int]:
    """Per call kind of the item build, the scenarios of `subscale` built with today's text models and prompts: those
    with rows in that stage's table and in every earlier stage's, written by the slate's generator (the dialogues by
    its validator, the tone selection by its tone judge) under the stage's current prompt hash. Their requests are
    the ones a rerun sends, so the call cache answers them."""
    from assets.speech_eq.text_stages import PROMPT_HASH
    from eyt_dagster.speech_eq.generators import TEMPLATE

    speech = slate.speech
    generator, validator, judge = (speech.text_model(r) for r in ("generator", "validator", "tone_judge"))
    if generator is None:
        return dict.fromkeys(SPEECH_BUILD_KINDS, 0)
    wanted = {
        "generator": generator.id,
        "validator": validator.id if validator else TEMPLATE,
        "judge": judge.id if judge else f"{TEMPLATE} rule",
    }
    done: set[str] | None = None
    built: dict[str, int] = {}
    for table, stage, kinds in SPEECH_STAGES:
        rows = _partition(table, {"subscale": subscale}, warehouse)
        ids: set[str] = set()
        if not rows.empty and {"scenario_id", "prompt_hash"} <= set(rows.columns):
            keep = rows["prompt_hash"] == PROMPT_HASH[stage]
            for column, value in wanted.items():  # the dialogues name their validator, the selection its judge
                if column in rows:
                    keep &= rows[column] == value
            ids = set(rows.loc[keep.fillna(False).astype(bool), "scenario_id"])
        done = ids if done is None else done & ids
        built.update(dict.fromkeys(kinds, len(done)))
    return built


def probe_share(pools: Sequence[str], warehouse: Path) -> float:
    """The share of the answered user turns in dialogue_turns of these pools (any target) whose gold emotion is
    not neutral: the prosody probe perceives each such voiced turn again. 1 (every turn, an upper bound) when the
    warehouse holds no answered turn of them yet."""
    turns = _partition("dialogue.dialogue_turns", {"pool": list(pools)}, warehouse) if pools else None
    if turns is None or turns.empty or "gold_emotion" not in turns:
        return 1.0
    answered = turns[(turns["turn"] > 0) & turns["gold_emotion"].notna()]
    if "error" in answered:
        answered = answered[answered["error"].isna()]
    return float((answered["gold_emotion"] != "neutral").mean()) if len(answered) else 1.0


def warehouse_done(slate: Slate, selection: Selection, warehouse: Path) -> Done:
    """What the warehouse at `warehouse` holds of `selection`'s work."""
    built_and_design = {p: pool_seeds(p, slate.dialogues_per_pool, warehouse) for p in selection.pools}
    remote_speech = [t for t in selection.speech_targets if not slate.target(t).is_baseline]
    return Done(
        played={(t, p): played_dialogues(t, p, warehouse) for t in selection.targets for p in selection.pools},
        seeds={p: built for p, (built, _) in built_and_design.items()},
        design={p: planned for p, (_, planned) in built_and_design.items()},
        speech_left={t: speech_left(t, warehouse) for t in remote_speech},
        built={s: speech_built(s, slate, warehouse) for s in selection.subscales} if selection.speech else {},
        voiced={(t, p): voice_played(t, p, warehouse) for t in selection.voice_targets for p in selection.pools},
        probe_share=probe_share(selection.pools, warehouse) if selection.voice_targets else 1.0,
    )
