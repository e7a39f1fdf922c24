"""The annotation sheet: what `eyt annotate export` writes for people to fill in and `eyt annotate import` reads
back (docs/annotation.md). One place for the sheet's columns, the fields people score and their scales, the
manifest that maps the sheet's blind item ids to dialogues, and the digest that tells a labelled dialogue from one
played again since. Pure: no file is read or written here.

The sheet is a CSV with one row per item x judged turn and one more per item with turn `final`:

    sheet,item,turn,annotator,empathy,persona,anthropomorphic,completed,satisfaction,note
    s7-3f9a2c1d,i001,1,,,,,,,
    ...
    s7-3f9a2c1d,i001,final,,,,,,,

- A turn row takes the three dimension scores (TURN_FIELDS), on the judge's scale for one dimension: 0-5, the sum
  of five sub-indicators, on the half-point grid.
- The `final` row takes the whole dialogue's fields (DIALOGUE_FIELDS): completed (1 = the assistant helped the user
  reach the goal, 0 = not) and satisfaction (an integer 1-5).
- An empty cell means "not scored". A row with every score cell empty is an unfilled row and is skipped.
- annotator names whoever filled the row; a row with a score and no annotator is an error.
- note is free text and is not imported.

The items carry no target or pool: the sheet is blind. The manifest (SheetManifest) keeps the mapping, and its
copy in the data directory is what an import checks a sheet against.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from eyt_dagster.eyt_bench.taxonomy import DIMENSION_NAMES

TURN_FIELDS: tuple[str, ...] = tuple(DIMENSION_NAMES.values())  # empathy, persona, anthropomorphic
DIALOGUE_FIELDS: tuple[str, ...] = ("completed", "satisfaction")
SCORE_FIELDS: tuple[str, ...] = (*TURN_FIELDS, *DIALOGUE_FIELDS)
SHEET_COLUMNS: tuple[str, ...] = ("sheet", "item", "turn", "annotator", *SCORE_FIELDS, "note")
# Where `eyt annotate export` keeps each sheet's manifest, under the data directory: <this>/<sheet>.json, the copy
# `eyt annotate import` checks a filled sheet against.
MANIFESTS_DIR = PurePosixPath("annotations") / "sheets"
# Where `eyt annotate import` keeps the labels it accepted, one file per import (resources/storage/annotation_labels.py).
LABELS_DIR = PurePosixPath("annotations") / "labels"
FINAL_TURN = "final"  # the turn cell of an item's whole-dialogue row
DIALOGUE_TURN = 0  # the turn number the whole-dialogue fields are stored under in dialogue.human_annotations

# Each field's allowed values, as people read them on the sheet and its pages.
SCALES: dict[str, str] = {
    **{f: "0 to 5 in steps of 0.5 (the sum of five criteria, each 0, 0.5 or 1)" for f in TURN_FIELDS},
    "completed": "1 (the assistant helped the user reach the goal) or 0 (it did not)",
    "satisfaction": "an integer from 1 (very dissatisfied) to 5 (very satisfied)",
}


def allowed(field: str, value: float) -> bool:
    """Whether a number is on the field's scale (SCALES)."""
    if field in TURN_FIELDS:
        return 0.0 <= value <= 5.0 and (value * 2) % 1 == 0
    if field == "completed":
        return value in (0.0, 1.0)
    if field == "satisfaction":
        return value in (1.0, 2.0, 3.0, 4.0, 5.0)
    raise KeyError(field)


class SheetItem(BaseModel):
    """One sampled dialogue: its blind id, where it came from, the judged turns the sheet lists and its digest."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    item: str
    target: str
    pool: str
    seed_id: str
    turns: tuple[int, ...]
    digest: str


class SheetManifest(BaseModel):
    """What a sheet was drawn from and how: the slate's name, the sampling seed, dialogues per target x pool, and
    every item. `sheet` is the id printed in each of the sheet's rows."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    sheet: str
    slate: str
    seed: int
    per_cell: int
    created_at: str
    items: tuple[SheetItem, ...]

    def by_item(self) -> dict[str, SheetItem]:
        return {i.item: i for i in self.items}


def sheet_id(seed: int, keys: Iterable[tuple[str, str, str]]) -> str:
    """`s<seed>-<8 hex>`: the seed and a hash of the sampled (target, pool, seed_id) keys, so two sheets drawn
    alike get the same id and any other draw gets another."""
    text = "\n".join("\t".join(k) for k in sorted(keys))
    return f"s{seed}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def dialogue_digest(turns: Iterable[Mapping[str, Any]]) -> str:
    """A hash of what a dialogue said: each turn's number, user text and reply, in turn order. A dialogue played
    again with other words gets another digest, so labels for the old one are not applied to the new one."""
    rows = sorted(((int(t["turn"]), t.get("user_text"), t.get("response_text")) for t in turns), key=lambda r: r[0])
    text = json.dumps([[n, u if isinstance(u, str) else None, r if isinstance(r, str) else None] for n, u, r in rows])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# the dialogue_turns columns a dialogue's digest reads
DIGESTED_COLUMNS: tuple[str, ...] = ("target", "pool", "seed_id", "turn", "user_text", "response_text")


def dialogue_digests(turns: pd.DataFrame) -> dict[tuple[str, str, str], str]:
    """dialogue_digest of every dialogue in rows of dialogue.dialogue_turns (target, pool, seed_id, turn, user_text,
    response_text), keyed by (target, pool, seed_id): what the export records and the import compares."""
    if turns.empty:
        return {}
    frame = turns.astype({"seed_id": str})
    return {
        (str(t), str(p), str(s)): dialogue_digest(group[["turn", "user_text", "response_text"]].to_dict("records"))
        for (t, p, s), group in frame.groupby(["target", "pool", "seed_id"], sort=False)
    }


def manifest_json(manifest: SheetManifest) -> str:
    return manifest.model_dump_json(indent=2) + "\n"


def parse_manifest(text: str) -> SheetManifest:
    """The manifest from its JSON; pydantic's ValidationError names a bad field."""
    return SheetManifest.model_validate_json(text)
