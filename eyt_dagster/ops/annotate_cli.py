"""`eyt annotate`: the human-labelled sample behind the corrected estimates (docs/annotation.md). `export` draws a
sample and writes a sheet for people to fill in; `import` reads filled sheets back. Each subcommand's arguments
and work live in its own module."""

from __future__ import annotations

import argparse


def add_annotate_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from eyt_dagster.ops import annotate_export, annotate_import

    annotate = sub.add_parser(
        "annotate",
        help="human labels for the judge-made metrics: export a sheet, import it filled in",
        description="Draw a seeded sample of dialogues for people to score (export), and read the filled sheets "
        "back (import). The labels correct the judge-made metrics' estimates and intervals (docs/annotation.md).",
    )
    steps = annotate.add_subparsers(dest="annotate_command", required=True)
    annotate_export.add_arguments(steps.add_parser("export", help=annotate_export.HELP))
    annotate_import.add_arguments(steps.add_parser("import", help=annotate_import.HELP))
