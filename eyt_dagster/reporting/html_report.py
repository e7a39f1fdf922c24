"""A self-contained HTML report: one page with inline CSS and images as data URIs, no scripts; its only links are
the model cards' ones into `eyt view` (which must be running to follow them).

Every piece of text and every table cell is HTML-escaped (model replies can contain anything). Number format,
decided per column: a column whose finite values all lie in [-1, 1] (shares, accuracies, correlations) gets 3
decimals, any other float column 1 decimal (in a long table with a `metric` column, decided per cell instead), and a column of whole numbers none; a non-zero value that would round to 0 is
shown with 2 significant digits instead; NaN and None show as an en dash. Columns `X`, `X_ci_low`, `X_ci_high`
become one cell "X [low, high]"; bare `ci_low`/`ci_high` attach to `value`, else to `diff`.
"""

from __future__ import annotations

import base64
import html as _html
import math
import numbers
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

import numpy as np
import pandas as pd

from eyt_dagster.core.baseline_text import NOT_EVALUATIONS
from eyt_dagster.reporting.cjk_font import embedded_css

TARGET_COLUMNS = ("target", "target_a", "target_b", "think_target", "non_think_target")
RISK_COLUMN = "self_preference_risk"
DASH = "\u2013"
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","PingFang SC","Microsoft YaHei","EYT Sans SC",
sans-serif;margin:2em auto;max-width:72em;padding:0 1em;
color:#222;line-height:1.4}
h1{margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
.meta{color:#666;font-size:.9em}
.banner{background:#fff4d6;border:1px solid #e0b84c;border-radius:6px;padding:.8em 1em;margin:1em 0}
table{border-collapse:collapse;font-size:.85em;margin:.8em 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:.25em .5em;vertical-align:top}
th{background:#f3f3f3;text-align:left}tr:nth-child(even) td{background:#fafafa}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.badge{display:inline-block;font-size:.75em;padding:0 .45em;border-radius:.8em;margin-left:.4em;
white-space:nowrap}
.badge.baseline{background:#e4ecf7;color:#1d4f91;border:1px solid #9fb8dc}
.badge.warn{background:#fde2e1;color:#9b1c1c;border:1px solid #e8a09a}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{color:#555;font-size:.85em}
.note{color:#555;font-style:italic}pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.85em}
"""
# only on a page whose tables carry markers (a report without them is byte for byte what it was before markers)
MARK_CSS = "sup.mark{font-size:.75em;font-weight:600;margin-left:.1em;cursor:help}sup.mark.h{color:#1d6b35}sup.mark.j{color:#777}\n"


# A number's marker by (row position, column): (the marker, what it means); see eyt_bench/shown_figures.py
Marks = dict[tuple[int, str], tuple[str, str]]


@dataclass
class Section:
    """One titled part of the report: a description, an optional table, figures and a closing note."""

    title: str
    description: str
    table: pd.DataFrame | None = None
    images: list[tuple[str, bytes]] = field(default_factory=list)
    note: str = ""
    labels: dict[str, str] = field(default_factory=dict)  # column -> the header shown (default: the column's name)
    more_tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)  # (heading, table) after the table
    target_link: Callable[[str], str] | None = None  # a target's address in eyt view, linked from its cells
    marks: Marks = field(default_factory=dict)  # markers on the table's numbers (a corrected figure's "h")


def _esc(value: object) -> str:
    return _html.escape(str(value), quote=True)


def _paragraphs(text: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return "".join(f"<p{attr}>{_esc(p.strip())}</p>" for p in text.split("\n\n") if p.strip())


def _missing(value: object) -> bool:
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def _numeric(value: object) -> TypeGuard[numbers.Real]:
    """A real number that is not a bool (numpy scalars included)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _decimals(values: Iterable[object]) -> int:
    """Decimals for a set of numbers (see the module docstring)."""
    finite = [float(v) for v in values if _numeric(v) and math.isfinite(float(v))]
    if finite and all(v.is_integer() for v in finite):
        return 0
    return 3 if finite and all(-1.0 <= v <= 1.0 for v in finite) else 1


def _fmt(value: object, decimals: int) -> str:
    if _missing(value):
        return DASH
    if not _numeric(value):
        return str(value)
    number = float(value)
    text = f"{number:.{decimals}f}"
    if number != 0 and math.isfinite(number) and float(text) == 0:
        text = f"{number:.2g}"
    return text


def _interval_groups(columns: list[str]) -> dict[str, tuple[str, str]]:
    """Point-estimate column -> (low, high) columns, for the interval patterns in the module docstring."""
    groups = {
        c: (f"{c}_ci_low", f"{c}_ci_high") for c in columns if f"{c}_ci_low" in columns and f"{c}_ci_high" in columns
    }
    if "ci_low" in columns and "ci_high" in columns:
        point = next((c for c in ("value", "diff") if c in columns), None)
        if point:
            groups[point] = ("ci_low", "ci_high")
    return groups


def _truthy(value: object) -> bool:
    if _missing(value):
        return False
    return value is True or str(value).strip().lower() in {"true", "1", "yes"}


def render_table(
    df: pd.DataFrame,
    baseline_targets: Collection[str] = (),
    max_rows: int = 500,
    labels: dict[str, str] | None = None,
    target_link: Callable[[str], str] | None = None,
    marks: Marks | None = None,
) -> str:
    """An escaped HTML table with merged interval cells and baseline / self-preference badges; `labels` gives a
    column's header (a merged interval cell's header says "[95% CI]"); `target_link(target)` the address a
    target's cell links to; `marks` a superscript marker after a number (by row position and column), its
    meaning as the marker's tooltip."""
    if any(name is not None for name in df.index.names):
        df = df.reset_index()
    columns = [str(c) for c in df.columns]
    df = df.set_axis(columns, axis=1).astype(object)
    groups = _interval_groups(columns)
    hidden = {c for pair in groups.values() for c in pair}
    shown = [c for c in columns if c not in hidden]
    decimals = {c: _decimals(df[[c, *groups.get(c, ())]].to_numpy().ravel()) for c in shown}
    per_row = "metric" in columns
    labels = labels or {}
    marks = marks or {}
    head = "".join(f"<th>{_esc(labels.get(c, c))}{' [95% CI]' if c in groups else ''}</th>" for c in shown)
    body = []
    for position, (_, row) in enumerate(df.head(max_rows).iterrows()):
        cells = []
        for c in shown:
            value, d = row[c], decimals[c]
            if per_row and d:  # a long table mixes scales (shares and 0-100 scores): decide per cell
                d = max(1, _decimals([row[x] for x in (c, *groups.get(c, ()))]))
            text = _esc(_fmt(value, d))
            if (mark := marks.get((position, c))) is not None:
                text += f'<sup class="mark {_esc(mark[0])}" title="{_esc(mark[1])}">{_esc(mark[0])}</sup>'
            if c in groups:
                low, high = (_esc(_fmt(row[x], d)) for x in groups[c])
                text = f"{text} [{low}, {high}]"
            if c in TARGET_COLUMNS and target_link is not None and not _missing(value):
                text = f'<a href="{_esc(target_link(str(value)))}">{text}</a>'
            if c in TARGET_COLUMNS and str(value) in baseline_targets:
                text += '<span class="badge baseline">baseline</span>'
            if c == RISK_COLUMN and _truthy(value):
                text = '<span class="badge warn">\u26a0 self-preference risk</span>'
            cells.append(f'<td class="num">{text}</td>' if _numeric(value) else f"<td>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    more = f'<p class="note">First {max_rows} of {len(df)} rows.</p>' if len(df) > max_rows else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def _figure(caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{_esc(caption)}">'
        f"<figcaption>{_esc(caption)}</figcaption></figure>"
    )


def _banner(baseline_targets: list[str]) -> str:
    if not baseline_targets:
        return ""
    names = ", ".join(f"<strong>{_esc(t)}</strong>" for t in baseline_targets)
    return (
        f'<div class="banner">Embedded baselines: {names}. These targets are rule-based reference points '
        f"shipped with the benchmark; their numbers are <strong>{NOT_EVALUATIONS}</strong>. "
        'Their rows carry a <span class="badge baseline">baseline</span> badge.</div>'
    )


def render_report(
    sections: list[Section],
    *,
    title: str,
    generated_at: str,
    slate_yaml: str,
    prompt_hashes: dict[str, str],
    baseline_targets: list[str],
    max_rows: int = 500,
) -> str:
    """The whole report as one HTML string (tables show at most `max_rows` rows each)."""
    toc = "".join(f'<li><a href="#s{i}">{_esc(s.title)}</a></li>' for i, s in enumerate(sections, 1))
    parts = [
        f"<h1>{_esc(title)}</h1>",
        f'<p class="meta">Generated {_esc(generated_at)}</p>',
        _banner(baseline_targets),
        f"<ol>{toc}</ol>" if sections else "",
    ]
    for i, s in enumerate(sections, 1):
        parts += [f'<section id="s{i}"><h2>{_esc(s.title)}</h2>', _paragraphs(s.description)]
        if s.table is not None:
            parts.append(
                render_table(s.table, baseline_targets, max_rows, s.labels, s.target_link, s.marks)
                if len(s.table.columns)
                else '<p class="note">(empty table)</p>'
            )
        for heading, table in s.more_tables:
            parts += [
                f"<h3>{_esc(heading)}</h3>",
                render_table(table, baseline_targets, max_rows, s.labels, s.target_link),
            ]
        parts += [_figure(caption, png) for caption, png in s.images]
        parts += [_paragraphs(s.note, "note"), "</section>"]
    hashes = "".join(
        f"<tr><td>{_esc(k)}</td><td><code>{_esc(v)}</code></td></tr>" for k, v in sorted(prompt_hashes.items())
    )
    parts += [
        '<section id="provenance"><h2>Provenance</h2><h3>Slate</h3>',
        f"<pre>{_esc(slate_yaml)}</pre>",
        "<h3>Prompt hashes</h3>",
        f"<table><thead><tr><th>prompt</th><th>hash</th></tr></thead><tbody>{hashes}</tbody></table>",
        f'<p class="meta">Generated {_esc(generated_at)}</p></section>',
    ]
    body = "".join(parts)
    # Chinese text on the page (dialogue excerpts of a Chinese pool): the shipped font, cut down to those characters
    font = embedded_css(body)
    css = CSS + (MARK_CSS if any(s.marks for s in sections) else "")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>'
        f"<style>{font}{css}</style></head><body>{body}</body></html>\n"
    )


def write_report(path: str | Path, html: str) -> Path:
    """Write the page as UTF-8 (creating parent directories) and return its path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out


__all__ = ["Marks", "Section", "render_report", "render_table", "write_report"]
