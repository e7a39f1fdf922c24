"""Reading a filled annotation sheet back (`eyt annotate import`, docs/annotation.md): the checks a sheet must pass,
the labels it gives in the long format of dialogue.human_annotations, how they join the labels imported before,
and how far the annotators agree. Pure: the caller reads the files, the manifest and the warehouse, and writes.

A sheet (eyt_bench/annotation_sheet.py) is checked against the manifest the export kept in the data directory,
the slate's name, and the dialogues the warehouse holds now (their digests). Every problem is collected; a file
with any problem gives no labels.

The label store keeps one row per annotator x dialogue x turn x field (LABEL_COLUMNS). A label is identified by
who scored what: (annotator, target, pool, seed_id, turn, dimension) (LABEL_KEY). The sheet is kept as provenance
but is not part of the key, so the same person scoring the same dialogue again on another sheet is the same label
(the same value: nothing new; another value: a conflict), and the table never holds one annotator twice for one
turn-cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from eyt_dagster.core import stats
from eyt_dagster.eyt_bench.annotation_sheet import (
    DIALOGUE_FIELDS,
    DIALOGUE_TURN,
    FINAL_TURN,
    SCALES,
    SCORE_FIELDS,
    SHEET_COLUMNS,
    TURN_FIELDS,
    SheetItem,
    SheetManifest,
    allowed,
)

LABEL_COLUMNS: tuple[str, ...] = (
    "annotator",
    "target",
    "pool",
    "seed_id",
    "turn",
    "dimension",
    "score",
    "sheet",
    "source_file",
)
LABEL_KEY: tuple[str, ...] = ("annotator", "target", "pool", "seed_id", "turn", "dimension")
DIALOGUE_KEY: tuple[str, ...] = ("target", "pool", "seed_id")
SHOWN_ERRORS = 20  # a file's errors printed before "... and N more"


@dataclass(frozen=True)
class Problem:
    """One error of a file: the file's line (header = 1; None for the file as a whole), the field, what is wrong."""

    line: int | None
    field: str | None
    text: str

    def render(self, name: str) -> str:
        where = [name]
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(self.field)
        return f"{': '.join(where)}: {self.text}"


@dataclass
class SheetCheck:
    """What checking one file found: its sheet id, its errors, the labels it gives (LABEL_COLUMNS, only when it has
    no errors), the unfilled rows skipped, the columns ignored, and the items whose dialogue is gone or was played
    again since the export (item id -> 'gone' or 'played again'), whose labels are not in `labels`."""

    name: str
    sheet: str | None = None
    problems: list[Problem] = field(default_factory=list)
    labels: pd.DataFrame = field(default_factory=lambda: empty_labels())
    unfilled: int = 0
    scored_rows: int = 0
    ignored_columns: tuple[str, ...] = ()
    vanished: dict[str, str] = field(default_factory=dict)
    vanished_labels: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def error_lines(self, shown: int = SHOWN_ERRORS) -> list[str]:
        lines = [p.render(self.name) for p in self.problems[:shown]]
        if len(self.problems) > shown:
            lines.append(f"{self.name}: ... and {len(self.problems) - shown} more error(s)")
        return lines

    def vanished_line(self, skipped: bool) -> str:
        """One line: how many items label dialogues that are gone or changed, which, and what to do."""
        by_kind: dict[str, list[str]] = {}
        for item, kind in sorted(self.vanished.items()):
            by_kind.setdefault(kind, []).append(item)
        which = "; ".join(f"{kind}: {', '.join(items)}" for kind, items in sorted(by_kind.items()))
        head = (
            f"{self.name}: {len(self.vanished)} item(s) label dialogues that are no longer in the warehouse as they "
            f"were exported ({which}); their {self.vanished_labels} label(s) were not imported"
        )
        if skipped:
            return f"{head}, the rest were; export a new sheet (`eyt annotate export`) to label the dialogues as played now"
        return (
            f"{head}, and neither was the rest of the file; export a new sheet (`eyt annotate export`) for them, or "
            "import the rest with --skip-vanished"
        )


def empty_labels() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=_DTYPES[c]) for c in LABEL_COLUMNS})


_DTYPES = {c: ("int64" if c == "turn" else "float64" if c == "score" else "object") for c in LABEL_COLUMNS}


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _turn_of(text: str, item: SheetItem) -> int | None:
    """The row's turn: DIALOGUE_TURN for `final`, else one of the item's listed turns; None when it is neither."""
    if text == FINAL_TURN:
        return DIALOGUE_TURN
    value = _number(text)
    if value is None or not value.is_integer() or int(value) not in item.turns:
        return None
    return int(value)


def check_sheet(
    name: str,
    raw: pd.DataFrame,
    manifests: Mapping[str, SheetManifest | None],
    slate_name: str,
    digests: Mapping[tuple[str, str, str], str],
    *,
    manifest_place: str = "annotations/sheets",
) -> SheetCheck:
    """Check one filled sheet. `raw`: the file read as text (every cell a string, empty cells ''); `manifests`:
    sheet id -> its manifest copy in the data directory, None when there is none; `digests`: current_digests of
    the warehouse's dialogue turns. Labels for dialogues gone or played again are left out and listed in
    `vanished`; whether the rest is taken is the caller's choice (--skip-vanished)."""
    check = SheetCheck(name)
    columns = [str(c).strip() for c in raw.columns]
    raw = raw.set_axis(columns, axis=1)
    missing = [c for c in SHEET_COLUMNS if c not in columns]
    check.ignored_columns = tuple(c for c in columns if c not in SHEET_COLUMNS)
    if missing:
        check.problems.append(
            Problem(1, None, f"missing column(s) {', '.join(missing)}; a sheet has {', '.join(SHEET_COLUMNS)}")
        )
        return check
    df = raw[list(SHEET_COLUMNS)].apply(lambda s: s.astype(str).str.strip())
    df.index = pd.RangeIndex(2, len(df) + 2)  # the file's line numbers
    sheets = sorted(set(df["sheet"]) - {""})
    if len(sheets) > 1:
        check.problems.append(
            Problem(None, "sheet", f"several sheets in one file ({', '.join(sheets)}); import each sheet's rows alone")
        )
        return check
    if not sheets:
        check.problems.append(Problem(None, "sheet", "no row names its sheet"))
        return check
    check.sheet = sheets[0]
    manifest = manifests.get(check.sheet)
    if manifest is None:
        check.problems.append(
            Problem(
                None,
                "sheet",
                f"{check.sheet} was not exported from this data directory: no {manifest_place}/{check.sheet}.json",
            )
        )
        return check
    if manifest.slate != slate_name:
        check.problems.append(
            Problem(
                None,
                None,
                f"sheet {check.sheet} was drawn from slate {manifest.slate} with seed {manifest.seed}; this data "
                f"directory's slate is {slate_name}",
            )
        )
        return check
    rows = _row_labels(check, df, manifest)
    if check.problems:
        return check
    labels = pd.DataFrame(rows, columns=[*LABEL_COLUMNS, "item"]).astype({"turn": "int64", "score": "float64"})
    labels["sheet"] = check.sheet
    labels["source_file"] = name
    items = manifest.by_item()
    keep = np.ones(len(labels), dtype=bool)
    for item_id in sorted(set(labels["item"])):
        item = items[item_id]
        now = digests.get((item.target, item.pool, item.seed_id))
        if now == item.digest:
            continue
        check.vanished[item_id] = "gone" if now is None else "played again"
        keep &= (labels["item"] != item_id).to_numpy()
    check.vanished_labels = int((~keep).sum())
    check.labels = labels[keep].drop(columns="item").reset_index(drop=True)
    return check


def _row_labels(check: SheetCheck, df: pd.DataFrame, manifest: SheetManifest) -> list[dict[str, object]]:
    """Each scored row's labels (with the row's item id under 'item'); problems go to check.problems."""
    items = manifest.by_item()
    out: list[dict[str, object]] = []
    seen: dict[tuple[str, str, int], int] = {}
    for line, row in df.iterrows():
        n = int(str(line))
        filled = [f for f in SCORE_FIELDS if row[f] != ""]
        if not filled:
            check.unfilled += 1
            continue
        check.scored_rows += 1
        found = len(check.problems)
        item = items.get(row["item"])
        if item is None:
            check.problems.append(Problem(n, "item", f"unknown item '{row['item']}' (not on sheet {manifest.sheet})"))
        turn = _turn_of(row["turn"], item) if item is not None else None
        if item is not None and turn is None:
            listed = ", ".join([*map(str, item.turns), FINAL_TURN])
            check.problems.append(Problem(n, "turn", f"'{row['turn']}' is not a turn of item {item.item} ({listed})"))
        if row["sheet"] == "":
            check.problems.append(Problem(n, "sheet", f"empty; every row names its sheet ({manifest.sheet})"))
        if row["annotator"] == "":
            check.problems.append(Problem(n, "annotator", "empty on a scored row; name who scored it"))
        values: dict[str, float] = {}
        for f in filled:
            value = _number(row[f])
            if value is None:
                check.problems.append(Problem(n, f, f"'{row[f]}' is not a number"))
            elif turn is not None and (f in DIALOGUE_FIELDS) != (turn == DIALOGUE_TURN):
                where = "the final row" if turn == DIALOGUE_TURN else "a turn row"
                belongs = "turn rows" if f in TURN_FIELDS else f"the '{FINAL_TURN}' row"
                check.problems.append(Problem(n, f, f"not scored on {where}: {f} belongs on {belongs}"))
            elif not allowed(f, value):
                check.problems.append(Problem(n, f, f"{row[f]} is off its scale: {SCALES[f]}"))
            else:
                values[f] = value
        if item is not None and turn is not None and row["annotator"]:
            key = (row["annotator"], item.item, turn)
            if key in seen:
                check.problems.append(
                    Problem(n, "turn", f"duplicate of line {seen[key]} (same annotator, item and turn)")
                )
            else:
                seen[key] = n
        if len(check.problems) > found or item is None or turn is None:
            continue
        for f, value in values.items():
            out.append(
                {
                    "annotator": row["annotator"],
                    "target": item.target,
                    "pool": item.pool,
                    "seed_id": item.seed_id,
                    "turn": turn,
                    "dimension": f,
                    "score": value,
                    "item": item.item,
                }
            )
    return out


@dataclass(frozen=True)
class Merge:
    """How a file's labels join the store: `new` to write; `same` already there with the same value; `conflicts`
    there with another value (each with the earlier value and file: columns score_before, source_before)."""

    new: pd.DataFrame
    same: int
    conflicts: pd.DataFrame

    def conflict_line(self, name: str) -> str:
        earlier = sorted(set(self.conflicts["source_before"]))
        first = self.conflicts.iloc[0]
        example = (
            f"e.g. {first['annotator']} on {first['target']} / {first['pool']} / {first['seed_id']} "
            f"turn {first['turn']} {first['dimension']}: {first['score_before']:g} before, {first['score']:g} now"
        )
        return (
            f"{name}: {len(self.conflicts)} label(s) give another value than was imported before from "
            f"{', '.join(earlier)} ({example}); nothing imported; --replace replaces them"
        )


def merge(store: pd.DataFrame, labels: pd.DataFrame) -> Merge:
    """Sort a file's labels against the store's (both LABEL_COLUMNS) by LABEL_KEY."""
    key = list(LABEL_KEY)
    before = store[[*key, "score", "source_file"]].rename(
        columns={"score": "score_before", "source_file": "source_before"}
    )
    joined = labels.merge(before.astype({"turn": "int64"}), on=key, how="left", validate="one_to_one")
    known = joined["score_before"].notna()
    same = known & (joined["score"] == joined["score_before"])
    conflicts = known & ~same
    return Merge(
        new=labels[~known.to_numpy()].reset_index(drop=True),
        same=int(same.sum()),
        conflicts=joined[conflicts.to_numpy()].reset_index(drop=True),
    )


def effective(files: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The store's labels from its files in the order written: a label given by two files (an import with
    --replace interrupted before it rewrote the earlier file) counts as the later file gives it."""
    frames = [f for f in files if len(f)]
    if not frames:
        return empty_labels()
    every = pd.concat(frames, ignore_index=True).astype({"turn": "int64", "score": "float64"})
    return every.drop_duplicates(list(LABEL_KEY), keep="last").reset_index(drop=True)


def without(frame: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """`frame`'s rows whose LABEL_KEY is not one of `labels`' (what --replace keeps of an earlier file)."""
    if frame.empty or labels.empty:
        return frame
    key = list(LABEL_KEY)
    drop = pd.MultiIndex.from_frame(labels[key].astype({"turn": "int64"}))
    mine = pd.MultiIndex.from_frame(frame[key].astype({"turn": "int64"}))
    return frame[~mine.isin(drop)].reset_index(drop=True)


def current_labels(
    labels: pd.DataFrame, manifests: Mapping[str, SheetManifest | None], digests: Mapping[tuple[str, str, str], str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the labels whose dialogue is still the one their sheet showed, the others). A label's dialogue is the one its
    sheet's manifest digested (annotation_sheet.dialogue_digest); `digests` are the warehouse's dialogues now
    (annotation_sheet.dialogue_digests). A dialogue played again since (another digest) or gone, or a sheet whose
    manifest is gone from the data directory, leaves its labels out: people scored other words."""
    if labels.empty:
        return labels, labels
    drawn: dict[tuple[str, str, str, str], str] = {}
    for sheet, manifest in manifests.items():
        for item in manifest.items if manifest is not None else ():
            drawn[(sheet, item.target, item.pool, item.seed_id)] = item.digest
    keys = zip(
        labels["sheet"].astype(str), labels["target"], labels["pool"], labels["seed_id"].astype(str), strict=True
    )
    same = [
        (shown := drawn.get((s, str(t), str(p), i))) is not None and digests.get((str(t), str(p), i)) == shown
        for s, t, p, i in keys
    ]
    keep = pd.Series(same, index=labels.index, dtype=bool)
    return labels[keep].reset_index(drop=True), labels[~keep].reset_index(drop=True)


def agreement(labels: pd.DataFrame) -> pd.DataFrame:
    """Per field (SCORE_FIELDS): the labels, the annotators, the dialogues with >= 2 annotators, the units (a turn
    for the turn fields, a dialogue for the dialogue fields) scored by >= 2 of them, and Krippendorff's alpha
    (interval) over the units (NaN with no unit scored twice or one value throughout)."""
    rows = []
    for f in SCORE_FIELDS:
        mine = labels[(labels["dimension"] == f) & labels["score"].notna()]
        units = mine.pivot_table(index=[*DIALOGUE_KEY, "turn"], columns="annotator", values="score", aggfunc="mean")
        counts = units.notna().sum(axis=1) if len(units) else pd.Series(dtype=int)
        shared = counts[counts >= 2]
        dialogues = shared.index.droplevel("turn").unique() if len(shared) else []
        alpha = stats.krippendorff_alpha(units.T.to_numpy(dtype=float), "interval") if len(units) else float("nan")
        rows.append(
            {
                "field": f,
                "labels": len(mine),
                "annotators": int(mine["annotator"].nunique()),
                "items_2plus": len(dialogues),
                "units_2plus": len(shared),
                "alpha": alpha,
            }
        )
    return pd.DataFrame(rows)


def agreement_lines(table: pd.DataFrame) -> list[str]:
    """One line per field that has labels, e.g. 'empathy: 40 label(s) by 2 annotator(s); 5 item(s) with >= 2
    annotators (20 turns), Krippendorff's alpha (interval) 0.71'."""
    lines = []
    for r in table.itertuples():
        if not r.labels:
            continue
        unit = "turns" if r.field in TURN_FIELDS else "dialogues"
        alpha = "n/a" if pd.isna(r.alpha) else f"{r.alpha:.2f}"
        lines.append(
            f"  {r.field}: {r.labels} label(s) by {r.annotators} annotator(s); {r.items_2plus} item(s) with >= 2 "
            f"annotators ({r.units_2plus} {unit}), Krippendorff's alpha (interval) {alpha}"
        )
    return lines


def combine_annotations(csv: pd.DataFrame, imported: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """dialogue.human_annotations' rows (LABEL_COLUMNS): the slate CSV's rows (human_alignment.read_annotations,
    with sheet and source_file) then the imported labels. A CSV row of an annotator, turn-cell and field that an
    imported label also gives is left out (the table holds one score per annotator and cell); the second value
    is how many were."""
    if not len(csv) and not len(imported):
        return empty_labels(), 0
    csv = csv[list(LABEL_COLUMNS)].astype({"turn": "int64", "score": "float64", "seed_id": str})
    imported = imported[list(LABEL_COLUMNS)].astype({"turn": "int64", "score": "float64", "seed_id": str})
    unshadowed = without(csv, imported)
    kept = [f for f in (unshadowed, imported) if len(f)]
    out = pd.concat(kept, ignore_index=True) if kept else empty_labels()
    return out, len(csv) - len(unshadowed)
