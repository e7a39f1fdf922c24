"""`eyt annotate export` (docs/annotation.md#exporting-a-sheet): draw a seeded sample of finished dialogues, the same
ChatSEEDs for every target of a pool, and write a blind sheet for people to score with a page per dialogue. The
sampling and the sheet's rows are eyt_bench/annotation_sample.py's, the pages reporting/annotation_pages.py's."""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eyt_dagster.eyt_bench.annotation_sheet import SheetManifest

HELP = "draw a seeded sample of dialogues and write a blind sheet (CSV and pages) for people to score"
DESCRIPTION = (
    "Draw, per pool, a seeded uniform sample of the ChatSEEDs every target of the pool finished (judged turns and "
    "a final verdict), the same ChatSEEDs for every target; write the sheet people fill in (sheet.csv, one row per "
    "judged turn and one per dialogue), its manifest, and a page per dialogue showing what the judge saw, without "
    "the judge's scores or the target's name. The items are shuffled and named i001, i002, ...; the same "
    "arguments on the same warehouse give the same sheet. Next: `eyt annotate import FILE` (docs/annotation.md)."
)
SHEET_FILE = "sheet.csv"
MANIFEST_FILE = "manifest.json"
# what the digests and the transcripts read of dialogue_turns
TURN_COLUMNS = ("target", "pool", "seed_id", "turn", "user_text", "response_text", "complete", "error")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from eyt_dagster.eyt_bench.annotation_sample import DEFAULT_PER_CELL

    parser.description = DESCRIPTION
    parser.add_argument(
        "--per-cell",
        type=_positive,
        default=DEFAULT_PER_CELL,
        metavar="N",
        help=f"dialogues per target x pool (default {DEFAULT_PER_CELL}); fewer available: all of them, and said so",
    )
    parser.add_argument("--seed", type=int, help="the sampling seed (default: the slate's seed)")
    parser.add_argument("--target", action="append", help="this target only (repeatable; default every target)")
    parser.add_argument("--pool", action="append", help="this pool only (repeatable; default every pool)")
    parser.add_argument("--annotator", metavar="NAME", help="write NAME in every row's annotator cell")
    parser.add_argument(
        "--out", metavar="DIR", help="the folder to write (default: $EYT_DATA_DIR/annotations/export-<sheet>)"
    )
    parser.add_argument("--force", action="store_true", help="write over an earlier export in DIR")
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: not a positive number of dialogues")
    return value


def _fail(line: str) -> int:
    print(f"eyt annotate export: {line}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from eyt_dagster.core.env_settings import data_dir
    from eyt_dagster.eyt_bench import annotation_sample as sample
    from eyt_dagster.eyt_bench.annotation_sheet import MANIFESTS_DIR, SheetManifest, manifest_json, sheet_id
    from eyt_dagster.reporting.annotation_pages import sheet_pages
    from eyt_dagster.slate import load_slate, slate_path_from_env
    from resources.storage.report_reads import read_table
    from resources.storage.warehouse import warehouse_path

    slate = load_slate(slate_path_from_env())
    warehouse = warehouse_path()
    if not warehouse.exists():
        return _fail(f"no warehouse at {warehouse}; run `eyt run` first")
    targets = [t.id for t in slate.eyt_targets]
    unknown = sorted(set(args.target or []) - set(targets))
    if unknown:
        return _fail(f"target(s) {unknown} are not EYT-Bench targets of the slate {slate_path_from_env()}")
    unplayed = sorted(set(args.pool or []) - set(slate.pools))
    if unplayed:
        return _fail(f"pool(s) {unplayed} are not in the slate; its pools are {list(slate.pools)}")
    targets = [t for t in targets if not args.target or t in args.target]
    pools = [p for p in slate.pools if not args.pool or p in args.pool]
    seed = slate.seed if args.seed is None else args.seed

    scores = read_table(warehouse, "dialogue.dialogue_scores", ["target", "pool", "seed_id", "completed"])
    verdicts = read_table(warehouse, "dialogue.judge_verdicts", ["target", "pool", "seed_id", "turn", "error"])
    scores = scores[scores["target"].isin(targets) & scores["pool"].isin(pools)] if len(scores) else scores
    judged = sample.judged_turns(verdicts)
    by_pool = sample.pool_targets(scores, targets, pools)
    draws = sample.draw(sample.finished_judged(scores, judged), by_pool, args.per_cell, seed)
    draws = [d for d in draws if d.seed_ids]
    if not draws:
        return _fail(
            f"no dialogue to sample: no ChatSEED of pool(s) {pools} was finished, judged and given a final verdict "
            f"by every target of the pool among {targets}; run `eyt run` first"
        )
    keys = [(t, d.pool, s) for d in draws for t in d.targets for s in d.seed_ids]
    turns = read_table(warehouse, "dialogue.dialogue_turns", TURN_COLUMNS)
    turns = turns[turns["pool"].isin([d.pool for d in draws])]
    items = sample.blind_items(draws, judged, sample.digests_of(turns, keys), seed)
    sheet = sheet_id(seed, keys)
    saved = data_dir() / MANIFESTS_DIR / f"{sheet}.json"
    manifest = SheetManifest(
        sheet=sheet,
        slate=slate.name,
        seed=seed,
        per_cell=args.per_cell,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        items=items,
    )
    manifest, clash = _as_saved(manifest, saved)  # the same draw again: the same sheet, byte for byte
    if clash:
        return _fail(
            f"sheet {sheet} was exported before with other dialogues ({saved}): some were played again since, so "
            "labels of the two would not match; draw another sample with --seed"
        )
    out = Path(args.out) if args.out else data_dir() / "annotations" / f"export-{sheet}"
    out = out.resolve()
    rows = sample.sheet_rows(manifest, args.annotator or "")
    sheet_text = _csv(rows)
    # the same sheet, unfilled, is written again as it is (nothing to lose); anything else needs --force
    if out.exists() and any(out.iterdir()) and not args.force and not _same_unfilled(out, sheet, sheet_text):
        earlier = _sheet_in(out)
        what = f"holds sheet {earlier} already" if earlier else "is not empty"
        return _fail(
            f"{out} {what} (a sheet.csv filled in there would be lost): pass --force to write over it, or --out "
            "another folder"
        )

    seeds = read_table(warehouse, "dialogue.chat_seeds", ["pool", "seed_id", "persona_text", "final_intent"])
    views = sample.dialogue_views(manifest, turns, seeds)
    pages = sheet_pages(manifest, views, {i.item: slate.judge_language(i.pool) for i in items})
    _write_export(out, sheet_text, manifest_json(manifest), pages)
    _write_atomic(saved, manifest_json(manifest))

    per_pool = Counter(i.pool for i in items)
    print(f"sheet {sheet}: {len(items)} item(s), {len(rows)} row(s) to fill in (seed {seed})")
    for d in draws:
        line = f"  {d.pool}: {per_pool[d.pool]} dialogue(s), {len(d.seed_ids)} ChatSEED(s) x {len(d.targets)} target(s)"
        if d.short:
            line += f"; only {d.available} ChatSEED(s) were finished by every target, so all of them, not {d.asked}"
        print(line)
    left_out = sorted(set(pools) - {d.pool for d in draws})
    if left_out:
        print(f"  no dialogue to sample in pool(s) {left_out}: no ChatSEED finished by every target there")
    missing = [(t, p) for p, ts in by_pool.items() for t in targets if t not in ts]
    for target, pool in missing:
        print(f"  {target} has no finished dialogue in {pool}: left out of the sample")
    print(f"wrote {out / SHEET_FILE}")
    print(f"wrote {out / MANIFEST_FILE}")
    print(f"wrote {out / 'index.html'} and {len(items)} page(s) in {out / 'items'}")
    print(f"saved the manifest at {saved}")
    print(f"next: open {out / 'index.html'}, fill in {out / SHEET_FILE}, then `eyt annotate import {out / SHEET_FILE}`")
    return 0


def _as_saved(manifest: SheetManifest, saved: Path) -> tuple[SheetManifest, bool]:
    """The manifest as saved before, when an earlier export of the same sheet has the same items (then the same
    sheet is written again, byte for byte, its time and --per-cell as they were); and whether an earlier copy has
    other items (a dialogue played again since has another digest)."""
    from eyt_dagster.eyt_bench.annotation_sheet import parse_manifest

    if not saved.exists():
        return manifest, False
    try:
        earlier = parse_manifest(saved.read_text())
    except ValueError:
        return manifest, True
    if (earlier.slate, earlier.seed, earlier.items) == (manifest.slate, manifest.seed, manifest.items):
        return earlier, False
    return manifest, True


def _same_unfilled(out: Path, sheet: str, sheet_text: str) -> bool:
    """Whether `out` holds this very sheet with its sheet.csv as this export writes it (nobody filled it in)."""
    try:
        return _sheet_in(out) == sheet and (out / SHEET_FILE).read_text() == sheet_text
    except OSError:
        return False


def _sheet_in(out: Path) -> str | None:
    """The sheet id of an earlier export in `out`, if it holds one."""
    from eyt_dagster.eyt_bench.annotation_sheet import parse_manifest

    try:
        return parse_manifest((out / MANIFEST_FILE).read_text()).sheet
    except (OSError, ValueError):
        return None


def _csv(rows: list[dict[str, str]]) -> str:
    from eyt_dagster.eyt_bench.annotation_sheet import SHEET_COLUMNS

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(SHEET_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def _write_export(out: Path, sheet: str, manifest: str, pages: dict[str, str]) -> None:
    """The export's files in `out`; an earlier export's item pages that this one has not are removed."""
    items = out / "items"
    items.mkdir(parents=True, exist_ok=True)
    for old in items.glob("*.html"):
        if f"items/{old.name}" not in pages:
            old.unlink()
    _write_atomic(out / SHEET_FILE, sheet)
    _write_atomic(out / MANIFEST_FILE, manifest)
    for name, html in pages.items():
        _write_atomic(out / name, html)


def _write_atomic(path: Path, text: str) -> None:
    """Replace the file at `path` with `text` (UTF-8) in one rename: a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text(text, encoding="utf-8")
    os.replace(scratch, path)
