"""The paper tables written out: the same cells as LaTeX, Markdown or CSV, one file per table (see
eyt_dagster/reporting/paper_tables.py for the cells and the footnote, docs/reports.md for the rules)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from eyt_dagster.reporting.paper_tables import DAGGER, DASH, PaperTable, empty_tables

FORMATS = {"latex": ".tex", "markdown": ".md", "csv": ".csv"}


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(table: PaperTable, footnote: list[str]) -> str:
    cols = list(table.cells.columns)
    lines = [
        f"**{table.caption}**",
        "",
        "| " + " | ".join(_md_cell(c) for c in cols) + " |",
        "| " + " | ".join("---" for _ in cols) + " |",
    ]
    for row in table.cells.itertuples(index=False):
        lines.append("| " + " | ".join(_md_cell(str(v)) for v in row) + " |")
    if table.cells.empty:
        lines.append("")
        lines.append("_No rows: nothing in the warehouse for this table._")
    lines.append("")
    lines += [f"_{line}_" if line else "" for line in footnote]
    return "\n".join(lines) + "\n"


LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    DASH: "--",
    DAGGER: r"$\dagger$",
    "\u2193": r"$\downarrow$",
    "\u0394": r"$\Delta$",
    "\u03c1": r"$\rho$",
    "\u03ba": r"$\kappa$",
    "\u03b1": r"$\alpha$",
    "<=": r"$\leq$",
}


def latex_escape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i : i + 2] == "<=":
            out.append(LATEX_ESCAPES["<="])
            i += 2
            continue
        out.append(LATEX_ESCAPES.get(text[i], text[i]))
        i += 1
    return "".join(out)


def _align(cells: pd.Series) -> str:
    """'r' for a column of numbers (or dashes), 'l' for text."""
    numeric = len(cells) and all(str(v)[:1].isdigit() or str(v)[:1] in "-+." or str(v) == DASH for v in cells)
    return "r" if numeric else "l"


def to_latex(table: PaperTable, footnote: list[str]) -> str:
    cols = list(table.cells.columns)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{{latex_escape(table.caption)}}}",
        rf"\label{{tab:{table.name}}}",
        r"\begin{tabular}{" + "".join(_align(table.cells[c]) for c in cols) + "}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in cols) + r" \\",
        r"\midrule",
    ]
    for row in table.cells.itertuples(index=False):
        lines.append(" & ".join(latex_escape(str(v)) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [r"\par\footnotesize " + latex_escape(line) for line in footnote]
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def to_csv(table: PaperTable) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(table.cells.columns)
    writer.writerows(table.cells.itertuples(index=False))
    return buf.getvalue()


def render(table: PaperTable, fmt: str, footnote: list[str]) -> str:
    if fmt == "markdown":
        return to_markdown(table, footnote)
    if fmt == "latex":
        return to_latex(table, footnote)
    if fmt == "csv":
        return to_csv(table)
    raise ValueError(f"unknown format '{fmt}': use one of {', '.join(FORMATS)}")


def write_tables(tables: list[PaperTable], out: Path, fmt: str, footnote: list[str]) -> list[Path]:
    """One file per table (CSV: the provenance in PROVENANCE.txt beside them, since a CSV has no footnote);
    files are written only when their bytes change."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}': use one of {', '.join(FORMATS)}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    files = [(out / f"{t.name}{FORMATS[fmt]}", render(t, fmt, footnote)) for t in tables]
    if fmt == "csv":
        files.append((out / "PROVENANCE.txt", "\n".join(footnote) + "\n"))
    for path, text in files:
        data = text.encode("utf-8")
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        written.append(path)
    return written


@dataclass(frozen=True)
class Export:
    """What export_tables did in one folder: the files written, each table it did not write with why it has no
    rows, and the earlier files of those tables it removed."""

    written: list[Path]
    empty: dict[str, str]
    removed: list[Path]


def export_tables(
    tables: list[PaperTable], sources: dict[str, pd.DataFrame], out: Path, fmt: str, footnote: list[str]
) -> Export:
    """The tables with rows written as write_tables writes them; a table with no row is not written (a file of
    captions and headers reads as a result), and an earlier file of it in `out` is removed, so the folder never
    holds rows the warehouse no longer has. `sources`: the warehouse frames the tables were built from."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}': use one of {', '.join(FORMATS)}")
    empty = empty_tables(tables, sources)
    removed = [path for name in empty if (path := out / f"{name}{FORMATS[fmt]}").is_file()]
    for path in removed:
        path.unlink()
    kept = [t for t in tables if t.name not in empty]
    return Export(write_tables(kept, out, fmt, footnote) if kept else [], empty, removed)
