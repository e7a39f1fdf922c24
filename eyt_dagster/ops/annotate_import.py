"""`eyt annotate import` (docs/annotation.md): check filled sheets against their manifest copies and the warehouse's
dialogues, add their labels to the data directory's label store, and say how far the annotators agree. The checks
and the agreement are eyt_dagster/eyt_bench/annotation_import.py's; the store is resources/storage/annotation_labels.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from eyt_dagster.eyt_bench.annotation_import import SheetCheck

HELP = "read filled annotation sheets back into the data directory's label store"
NEXT_STEP = "next: `eyt refresh` rebuilds dialogue/human_annotations and the tables that read it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check each filled sheet (its manifest copy under <data dir>/annotations/sheets/, the slate, the dialogues in "
        "the warehouse) and keep its labels under <data dir>/annotations/labels/. A file with any error imports "
        "nothing; errors name the file, the line and the field. Then `eyt refresh` (docs/annotation.md)."
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="a filled sheet (CSV) as `eyt annotate export` wrote it"
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="a label imported before with another value (same annotator, dialogue, turn and field) takes this "
        "file's value; every other label is kept",
    )
    parser.add_argument(
        "--skip-vanished",
        action="store_true",
        help="import the rest of a file whose items label dialogues gone from the warehouse or played again since "
        "the export (by default such a file is refused)",
    )
    parser.set_defaults(func=run)


def _read_sheet(path: Path) -> pd.DataFrame:
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from eyt_dagster.core.env_settings import data_dir
    from eyt_dagster.eyt_bench import annotation_import as ai
    from eyt_dagster.eyt_bench.annotation_sheet import DIGESTED_COLUMNS, MANIFESTS_DIR, dialogue_digests
    from eyt_dagster.slate import load_slate, slate_path_from_env
    from resources.storage import annotation_labels as store
    from resources.storage.report_reads import read_table
    from resources.storage.warehouse import warehouse_path

    data = data_dir()
    slate = load_slate(slate_path_from_env())
    turns = read_table(warehouse_path(), "dialogue.dialogue_turns", DIGESTED_COLUMNS)
    digests = dialogue_digests(turns)
    place = str(MANIFESTS_DIR)
    failed = written = 0
    for name in args.files:
        path = Path(name)
        try:
            raw = _read_sheet(path)
        except (OSError, ValueError, pd.errors.ParserError) as exc:
            print(f"{name}: cannot read it as a CSV: {exc}", file=sys.stderr)
            failed += 1
            continue
        ids = set(raw["sheet"].str.strip()) - {""} if "sheet" in raw.columns else set()
        try:
            manifests = {sheet: store.read_manifest(data, sheet) for sheet in ids}
        except ValueError as exc:  # a manifest copy that does not parse: named, nothing imported
            print(f"{name}: {exc}", file=sys.stderr)
            failed += 1
            continue
        check = ai.check_sheet(str(path.resolve()), raw, manifests, slate.name, digests, manifest_place=place)
        check.name = name  # messages name the file as the user gave it; the store records the absolute path
        if check.ignored_columns:
            print(f"{name}: ignored column(s) {', '.join(check.ignored_columns)} (not a sheet's)")
        if not check.ok:
            print("\n".join(check.error_lines()), file=sys.stderr)
            print(f"{name}: {len(check.problems)} error(s); nothing imported from it", file=sys.stderr)
            failed += 1
            continue
        if check.vanished:
            print(check.vanished_line(args.skip_vanished), file=sys.stderr)
            if not args.skip_vanished:
                failed += 1
                continue
        labels = check.labels.assign(source_file=str(path.resolve()))
        outcome = _store(name, data, labels, check, replace=args.replace)
        if outcome < 0:
            failed += 1
        written += outcome > 0
    every = store.read_store(data)
    if len(every):
        print(f"agreement over the {len(every)} label(s) in the store:")
        print("\n".join(ai.agreement_lines(ai.agreement(every))))
    if written:
        print(NEXT_STEP)
    return 2 if failed else 0


def _store(name: str, data: Path, labels: pd.DataFrame, check: SheetCheck, *, replace: bool) -> int:
    """Add one checked file's labels to the store: 1 when a file was written, 0 when there was nothing new, -1 when
    it was refused (a conflict without --replace)."""
    import pandas as pd

    from eyt_dagster.eyt_bench import annotation_import as ai
    from resources.storage import annotation_labels as store

    skipped = f"{check.unfilled} unfilled row(s) skipped"
    if check.vanished:
        skipped += f", {check.vanished_labels} label(s) of {len(check.vanished)} vanished item(s) skipped"
    merged = ai.merge(store.read_store(data), labels)
    if len(merged.conflicts) and not replace:
        print(merged.conflict_line(name), file=sys.stderr)
        return -1
    replaced = merged.conflicts[list(ai.LABEL_COLUMNS)] if len(merged.conflicts) else ai.empty_labels()
    fresh = pd.concat([df for df in (merged.new, replaced) if len(df)] or [ai.empty_labels()], ignore_index=True)
    if fresh.empty:
        print(f"{name}: sheet {check.sheet}: already imported ({merged.same} label(s)); nothing to do ({skipped})")
        return 0
    assert check.sheet is not None  # a file without errors names its sheet
    written = store.add_labels(data, fresh, check.sheet)
    if len(replaced):  # written first: an interruption here leaves the new value counting (annotation_import.effective)
        for path, frame in store.store_by_file(data).items():
            if path != written:
                kept = ai.without(frame, replaced)
                if len(kept) != len(frame):
                    store.rewrite(path, kept)
    parts = [f"{len(merged.new)} new"]
    if len(replaced):
        parts.append(f"{len(replaced)} replaced")
    if merged.same:
        parts.append(f"{merged.same} already imported")
    print(
        f"{name}: sheet {check.sheet}: imported {len(fresh)} label(s) from {check.scored_rows} scored row(s) "
        f"({', '.join(parts)}; {skipped}) -> {written}"
    )
    return 1
