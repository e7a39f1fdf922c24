"""The sample `eyt annotate export` draws for people to score (docs/annotation.md), and what its sheet and pages
list. Pure logic over warehouse frames; the sheet's columns, scales and manifest are annotation_sheet.py's.

- A dialogue can be sampled when it finished (it has a dialogue_scores row), the judges gave it a final verdict,
  and at least one of its turns has a judge verdict without error (its judged turns).
- Per pool, the ChatSEEDs every target of the pool finished that way are the candidates, and one seeded uniform
  sample of them is drawn for all the pool's targets alike: every target plays the same ChatSEEDs, so labelling
  the same ones keeps the targets' comparisons paired.
- The sampled (target, pool, ChatSEED) dialogues become the sheet's items, shuffled with the seed and named
  i001, i002, ... so neither the sheet nor the pages say which target or pool an item comes from.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from eyt_dagster.eyt_bench import dialogue_scoring
from eyt_dagster.eyt_bench.annotation_sheet import (
    FINAL_TURN,
    SHEET_COLUMNS,
    SheetItem,
    SheetManifest,
    dialogue_digest,
    dialogue_digests,
)
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_NAMES, RUBRIC

Key = tuple[str, str, str]  # (target, pool, seed_id)
KEYS = ["target", "pool", "seed_id"]
DEFAULT_PER_CELL = 10


def _key(row: Mapping[str, object]) -> Key:
    return (str(row["target"]), str(row["pool"]), str(row["seed_id"]))


def judged_turns(verdicts: pd.DataFrame) -> dict[Key, tuple[int, ...]]:
    """Per dialogue, its judged turns in order: the turns (1 and up) with at least one judge verdict without error,
    the turns the judge-made dimension scores are computed from."""
    found = dialogue_scoring.judged_turns(verdicts)
    found = found[found["turn"] >= 1]
    return {
        (str(t), str(p), str(s)): tuple(sorted(int(n) for n in g["turn"]))
        for (t, p, s), g in found.groupby(KEYS, sort=True)
    }


def finished_judged(scores: pd.DataFrame, judged: Mapping[Key, tuple[int, ...]]) -> set[Key]:
    """The dialogues that can be sampled: finished (a dialogue_scores row), with a final verdict (its `completed`
    is set) and at least one judged turn."""
    if scores.empty:
        return set()
    with_final = scores[scores["completed"].notna()]
    return {k for k in map(_key, with_final[KEYS].to_dict("records")) if judged.get(k)}


def pool_targets(scores: pd.DataFrame, targets: Sequence[str], pools: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Per pool (of `pools`, in that order), the targets (of `targets`, in that order) with at least one finished
    dialogue in it; a pool none of them played is left out."""
    played = {(str(t), str(p)) for t, p in zip(scores["target"], scores["pool"])} if len(scores) else set()
    out = {pool: tuple(t for t in targets if (t, pool) in played) for pool in pools}
    return {pool: ts for pool, ts in out.items() if ts}


@dataclass(frozen=True)
class PoolDraw:
    """One pool's share of the sample: its targets, how many ChatSEEDs every one of them finished (`available`),
    how many were asked for, and the ChatSEEDs drawn (sorted), the same for every target."""

    pool: str
    targets: tuple[str, ...]
    available: int
    asked: int
    seed_ids: tuple[str, ...]

    @property
    def short(self) -> bool:
        """Fewer ChatSEEDs available than asked for: all of them were taken."""
        return self.available < self.asked


def draw(eligible: Iterable[Key], targets: Mapping[str, Sequence[str]], per_cell: int, seed: int) -> list[PoolDraw]:
    """Per pool (sorted), a seeded uniform sample of `per_cell` of the ChatSEEDs every one of the pool's
    `targets` has an eligible dialogue of (all of them when fewer are available)."""
    by_cell: dict[tuple[str, str], set[str]] = {}
    for target, pool, seed_id in eligible:
        by_cell.setdefault((target, pool), set()).add(seed_id)
    out = []
    for pool in sorted(targets):
        cells = [by_cell.get((t, pool), set()) for t in targets[pool]]
        common = sorted(set.intersection(*cells)) if cells else []
        chosen = random.Random(f"{seed}:annotate:{pool}").sample(common, min(per_cell, len(common)))
        out.append(PoolDraw(pool, tuple(targets[pool]), len(common), per_cell, tuple(sorted(chosen))))
    return out


def item_name(n: int, count: int) -> str:
    """The blind id of the n-th item (1-based) of `count`: i001 ... i999, with more digits past 999 items."""
    return f"i{n:0{max(3, len(str(count)))}d}"


def blind_items(
    draws: Sequence[PoolDraw], judged: Mapping[Key, tuple[int, ...]], digests: Mapping[Key, str], seed: int
) -> tuple[SheetItem, ...]:
    """Every sampled (target, pool, ChatSEED) as a sheet item: shuffled with the seed, named in that order, with
    its judged turns and its digest; in item order."""
    keys = sorted((t, d.pool, s) for d in draws for t in d.targets for s in d.seed_ids)
    random.Random(f"{seed}:annotate:items").shuffle(keys)
    return tuple(
        SheetItem(
            item=item_name(n, len(keys)),
            target=target,
            pool=pool,
            seed_id=seed_id,
            turns=judged[(target, pool, seed_id)],
            digest=digests[(target, pool, seed_id)],
        )
        for n, (target, pool, seed_id) in enumerate(keys, start=1)
    )


def digests_of(turns: pd.DataFrame, keys: Iterable[Key]) -> dict[Key, str]:
    """dialogue_digest of each of these dialogues' dialogue_turns rows."""
    wanted = set(keys)
    every = dialogue_digests(turns[turns.set_index(list(KEYS)).index.isin(wanted)] if len(turns) else turns)
    return {k: every.get(k, dialogue_digest([])) for k in wanted}


def sheet_rows(manifest: SheetManifest, annotator: str = "") -> list[dict[str, str]]:
    """The empty sheet: per item (in order), a row per judged turn, then its `final` row; `sheet`, `item` and
    `turn` filled, `annotator` when given, every other cell empty."""
    rows = []
    for item in manifest.items:
        for turn in (*(str(n) for n in item.turns), FINAL_TURN):
            row = dict.fromkeys(SHEET_COLUMNS, "")
            row.update(sheet=manifest.sheet, item=item.item, turn=turn, annotator=annotator)
            rows.append(row)
    return rows


# -- what an item's page shows -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One turn of a transcript: the user's message, the assistant's reply, and whether the sheet has a row for it."""

    turn: int
    user_text: str
    response_text: str
    judged: bool


@dataclass(frozen=True)
class DialogueView:
    """What the judge saw of one item: the user's persona, the user's goal (the final intent), the transcript."""

    item: str
    persona: str
    goal: str
    exchanges: tuple[Exchange, ...]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def dialogue_views(manifest: SheetManifest, turns: pd.DataFrame, seeds: pd.DataFrame) -> list[DialogueView]:
    """Per item (in order), its persona and goal (from chat_seeds) and its answered turns (from dialogue_turns)."""
    answered = answered_turns(turns) if len(turns) else turns
    by_key: dict[Key, list[dict[str, object]]] = {}
    for row in answered.to_dict("records") if len(answered) else []:
        by_key.setdefault(_key(row), []).append(row)
    seed_rows = {(str(r["pool"]), str(r["seed_id"])): r for r in seeds.to_dict("records")} if len(seeds) else {}
    views = []
    for item in manifest.items:
        seed = seed_rows.get((item.pool, item.seed_id), {})
        rows = sorted(by_key.get((item.target, item.pool, item.seed_id), []), key=lambda r: int(str(r["turn"])))
        exchanges = tuple(
            Exchange(
                int(str(r["turn"])), _text(r["user_text"]), _text(r["response_text"]), int(str(r["turn"])) in item.turns
            )
            for r in rows
        )
        views.append(
            DialogueView(item.item, _text(seed.get("persona_text")), _text(seed.get("final_intent")), exchanges)
        )
    return views


# -- the rubric, read from the judge's prompt ------------------------------------------------------------------


@dataclass(frozen=True)
class Criterion:
    name: str  # the judge's field, e.g. empathy_recognition
    text: str  # what it means, as the judge's prompt says it


@dataclass(frozen=True)
class Dimension:
    """A dimension people score per turn (its sheet column), its heading in the judge's prompt and its criteria."""

    field: str
    heading: str
    criteria: tuple[Criterion, ...]


_LINE = re.compile(r"^\s*-\s*([a-z_]+)\s*[:：]\s*(.+?)\s*$")


def rubric(judge_turn_system: str) -> tuple[Dimension, ...]:
    """The per-turn rubric as the judge's system prompt (its raw template) words it: per dimension, the heading line
    above its criteria and each criterion's line. A criterion the prompt does not describe is an error."""
    lines = judge_turn_system.splitlines()
    found: dict[str, tuple[int, str]] = {}
    for i, line in enumerate(lines):
        m = _LINE.match(line)
        if m:
            found.setdefault(m.group(1), (i, m.group(2)))
    out = []
    for dim, subs in RUBRIC.items():
        names = [f"{dim}_{sub}" for sub in subs]
        missing = [n for n in names if n not in found]
        if missing:
            raise ValueError(f"the judge_turn prompt does not describe the criteria {missing}")
        first = min(found[n][0] for n in names)
        heading = lines[first - 1].strip() if first > 0 and not _LINE.match(lines[first - 1]) else ""
        out.append(
            Dimension(
                DIMENSION_NAMES[dim], heading or DIMENSION_NAMES[dim], tuple(Criterion(n, found[n][1]) for n in names)
            )
        )
    return tuple(out)


def final_question(judge_final_system: str) -> str:
    """What the judge's whole-dialogue instructions ask, without the reply format: the text before the line that
    introduces the reply's list of fields ("Reply with a JSON object:"); all of it when there is no such list."""
    lines = judge_final_system.strip().splitlines()
    first = next((i for i, line in enumerate(lines) if line.lstrip().startswith("- ")), None)
    if first is None or first < 2:
        return "\n".join(lines).strip()
    return "\n".join(lines[: first - 1]).strip()
