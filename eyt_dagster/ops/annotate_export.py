"""`eyt annotate export` (docs/annotation.md)."""

from __future__ import annotations

import argparse

HELP = "not built yet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("eyt annotate export")
