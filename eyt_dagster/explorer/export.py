"""`eyt view --export DIR`: a static copy of a selection of the explorer, every page a file, opened from file://.

The pages are the server's own: each is requested from the explorer's app in process (the same routes, queries
and templates), over a reader that sees only the selected targets and pools (export_selection.py). From the
leaderboard, the SpeechEQ item list, each cell's dialogue list and judges page, and each pair's paired
differences by every metric, the export follows every link to a page it keeps (export_links.py names them):
the other pages of those lists, every dialogue, the calls the dialogues link, side by side of the targets that
share a ChatSEED, every SpeechEQ item and its clips, the SEQ leaderboard and its subscales' pages (the default
persona condition), the spoken EYT-Bench's report with each voice cell's dialogues and each voiced dialogue with
its clips, the sequential design's page (the selected targets' comparisons) and the cost page (without the targets
not selected). Each page is then rewritten (export_html.py):
links to kept pages become relative file names, links to anything else plain text, forms a note. The files are
written to a temporary folder beside DIR and renamed into place when complete."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

from markupsafe import escape as jinja_escape
from starlette.types import ASGIApp

from eyt_dagster.explorer import app as explorer_app
from eyt_dagster.explorer import export_html, export_links, pairs
from eyt_dagster.explorer.asgi_request import request
from eyt_dagster.explorer.clips import clip_file
from eyt_dagster.explorer.export_links import (
    INDEX,
    SEQ,
    STYLESHEET,
    VOICE,
    Key,
    file_name,
    page_key,
    page_url,
    relative_href,
)
from eyt_dagster.explorer.export_selection import SelectedWarehouse, Selection, known_targets, select
from eyt_dagster.explorer.judges import LARGEST
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.reporting.cjk_font import has_cjk, shipped_font
from resources.models.cache_backend import CacheBackend

MARKER = "export.json"  # written into every export; --force replaces only a folder that holds one
SPEECH_LIST: Key = ("speech", "", "", "", "", "", "", 1)
EXPORT_CSS = """
/* the static export */
.export-banner { background: #fff6d6; border-bottom: 1px solid #e0c766; padding: 6px 16px; font-size: 12px; }
.export-note { color: #5a6673; font-size: 12px; border-left: 3px solid #e0c766; padding-left: 8px; }
span.not-exported { color: #5a6673; }
"""
FORM_WHAT = {  # what the form a note stands for chose
    "/dialogues": "the filter by failure kind is left out (each cell's dialogues are in their default order)",
    "/judges": "the choice of which spread to sort by is left out",
    "/speech": "the filters by composite, subscale and valence are left out",
    "/pairs": "the choice of pool, targets and metric is left out",
    "/seq": "the choice of persona condition is left out (the default condition's pages are kept)",
}


class ExportError(RuntimeError):
    """The export cannot be written (no warehouse, a folder it must not replace, two pages with one name)."""


@dataclass
class Written:
    directory: Path
    selection: Selection
    pages: Counter[str] = field(default_factory=Counter)  # page kind -> pages written
    clips: int = 0
    bytes: int = 0
    refused_clips: int = 0  # clips a page names that are not files the tables name inside the data directory
    failed: dict[str, str] = field(default_factory=dict)  # URL -> the error the explorer raised rendering it

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.pages.items()))
        refused = f" ({self.refused_clips} clip(s) not copied: not a file under the data directory)" * bool(
            self.refused_clips
        )
        failed = "".join(
            f"\neyt view: not exported, the explorer fails to render it: {url} ({error})"
            for url, error in sorted(self.failed.items())
        )
        return (
            f"eyt view: exported {sum(self.pages.values())} pages ({kinds}) and {self.clips} clip(s){refused}, "
            f"{self.bytes:,} bytes, to {self.directory}{failed}\n"
            f"eyt view: open {self.directory / 'index.html'}"
        )


def export(
    data_dir: Path,
    out: Path,
    targets: Iterable[str] = (),
    pools: Iterable[str] = (),
    force: bool = False,
    now: datetime | None = None,
    call_backend: CacheBackend | None = None,
) -> Written:
    """Write the export of the named targets and pools (all when none) of `data_dir` to `out`. A non-empty `out` is
    refused unless `force` and it holds an earlier export (its export.json). The call pages come from the call cache
    on `call_backend` (default: the SQLite file under `data_dir`)."""
    data_dir = Path(data_dir).resolve()
    out = Path(out).absolute()
    base = Warehouse(data_dir)
    if not base.root.exists():
        raise ExportError(f"no warehouse under {data_dir}: there is nothing to export yet")
    selection = select(base, targets, pools)
    _check_target_folder(out, data_dir, force)
    wh = SelectedWarehouse(data_dir, selection, call_backend)
    crawl = _Crawl(wh, selection)
    crawl.run()
    written = Written(out, selection, failed=crawl.failed)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        _write(crawl, staging, written, now or datetime.now(UTC))
        _swap_in(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written


def _check_target_folder(out: Path, data_dir: Path, force: bool) -> None:
    resolved = out.resolve()
    if resolved == data_dir or resolved.is_relative_to(data_dir / "warehouse") or data_dir.is_relative_to(resolved):
        raise ExportError(f"{out} is or holds the data directory {data_dir}: export to a folder of its own")
    if not out.exists():
        return
    if not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder")
    if not any(out.iterdir()):
        return
    if not (out / MARKER).is_file():
        raise ExportError(f"{out} is not empty and holds no earlier export ({MARKER}): choose an empty or new folder")
    if not force:
        raise ExportError(f"{out} holds an earlier export: pass --force to replace it")


def _swap_in(staging: Path, out: Path) -> None:
    """Rename the finished folder into place; an earlier export (or an empty folder) there is moved aside first and
    then deleted, so `out` is never half written."""
    if not out.exists():
        staging.rename(out)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
    aside.rmdir()
    out.rename(aside)
    try:
        staging.rename(out)
    except BaseException:
        aside.rename(out)
        raise
    shutil.rmtree(aside)


class _Crawl:
    """The pages of the export, rendered by the explorer's app: the roots, then every link to a page kept."""

    def __init__(self, wh: SelectedWarehouse, selection: Selection) -> None:
        self.wh = wh
        self.selection = selection
        self.app = explorer_app.create_app(wh.data_dir, wh)
        turns = wh.query(
            ["dialogue.dialogue_turns"],
            "SELECT target, pool, seed_id FROM dialogue_turns GROUP BY target, pool, seed_id ORDER BY pool, seed_id",
        )
        rank = {t: i for i, t in enumerate(selection.targets)}
        self.cells = sorted(
            {(str(t), str(p)) for t, p in zip(turns["target"], turns["pool"])}, key=lambda c: (c[1], rank[c[0]])
        )
        self.shared: dict[str, set[str]] = {}
        for target, seed in zip(turns["target"], turns["seed_id"]):
            self.shared.setdefault(str(seed), set()).add(str(target))
        self.pairs: list[tuple[str, str, str]] = []  # (pool, a, b): a before b in the selection's order
        for pool in dict.fromkeys(p for _, p in self.cells):
            in_pool = [t for t, p in self.cells if p == pool]
            self.pairs += [(pool, a, b) for i, a in enumerate(in_pool) for b in in_pool[i + 1 :]]
        known = known_targets(wh)
        self.speech_targets = [t for t in selection.targets if t in set(known.speech)]
        voiced = wh.query(["voice.dialogue_scores"], "SELECT DISTINCT target, pool FROM dialogue_scores")
        self.voice_cells = sorted({(str(t), str(p)) for t, p in zip(voiced["target"], voiced["pool"])})
        self.pages: dict[Key, str] = {}  # key -> the HTML the app rendered
        self.clips: set[str] = set()  # stored clip paths the pages play
        self.failed: dict[str, str] = {}  # URL -> the error the app raised rendering it

    def roots(self) -> list[Key]:
        found: list[Key] = [INDEX, SPEECH_LIST, SEQ, VOICE]
        for target, pool in self.cells:
            found += [("dialogues", target, pool, "seed_id", "", "", 1), ("judges", target, pool, LARGEST, 1)]
        found += [("speech", "", "", "", target, "", "", 1) for target in self.speech_targets]
        found += [("voice", target, pool) for target, pool in self.voice_cells]
        for pool, a, b in self.pairs:
            found += [("pairs", pool, a, b, metric, 1) for metric in pairs.METRICS]
        return found

    def keeps(self, key: Key) -> bool:
        """Whether the export holds this page: the selection's pages in their default order (every page number),
        side by side of all the selected targets on a ChatSEED, paired differences of the planned pairs, the
        spoken EYT-Bench's report, cells and voiced dialogues, and the sequential design's page and the cost page."""
        kind = key[0]
        if kind in ("speech_item", "call", "sequential", "costs") or key == INDEX:
            return True
        if kind in ("seq", "seq_subscale"):  # the default persona condition's SEQ leaderboard and subscales
            return key[-1] == SEQ[1]
        if kind == "voice":  # the spoken EYT-Bench's report, and each voice cell's with its dialogues
            return key == VOICE or (key[1], key[2]) in self.voice_cells
        if kind == "voice_dialogue":
            return key[1] in self.selection.targets
        if kind == "dialogues":
            return (key[1], key[2]) in self.cells and key[3:6] == ("seed_id", "", "")
        if kind == "judges":
            return (key[1], key[2]) in self.cells and key[3] == LARGEST
        if kind == "corrected":  # a cell's corrected figures and their arithmetic
            return (key[1], key[2]) in self.cells
        if kind == "dialogue":
            return key[1] in self.selection.targets
        if kind == "compare":
            return len(key[2]) >= 2 and set(key[2]) == self.shared.get(key[1])
        if kind == "pairs":
            return key[1:4] in self.pairs
        if kind == "speech":  # the whole list, and each selected target's choices per item
            return key[1:4] + key[5:7] == ("",) * 5 and (not key[4] or key[4] in self.speech_targets)
        return False

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        queue = list(self.roots())
        seen: set[Key] = set()
        while queue:
            key = queue.pop(0)
            if key in seen:
                continue
            seen.add(key)
            url = page_url(key, list(self.selection.targets))
            try:
                status, html = await _get(self.app, url)
            except Exception as exc:  # the server answers 500 to this page too: export the rest, say which failed
                self.failed[url] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                continue
            if status != 200:  # a root with nothing to show (no verdicts, no ChatSEED in common): not exported
                continue
            self.pages[key] = html
            found = export_html.links(html)
            for href in found.hrefs:
                linked, _ = page_key(href)
                if linked is not None and linked not in seen and self.keeps(linked):
                    queue.append(linked)
            for src in found.srcs:
                linked, _ = page_key(src)
                if linked is not None and linked[0] == "clip":
                    self.clips.add(linked[1])


async def _get(application: ASGIApp, url: str) -> tuple[int, str]:
    """One GET request to the ASGI app in process: (status, body)."""
    answer = await request(application, url, host="export")
    return answer.status, answer.body.decode()


def _write(crawl: _Crawl, folder: Path, written: Written, now: datetime) -> None:
    names: dict[Key, str] = {key: file_name(key) for key in crawl.pages}
    names[STYLESHEET] = file_name(STYLESHEET)
    clip_files: dict[str, tuple[Path, str]] = {}
    for stored in sorted(crawl.clips):
        found = clip_file(crawl.wh, stored)  # the rule /clip serves by
        if found is None:
            written.refused_clips += 1
            continue
        clip_files[stored] = (found[0], file_name(("clip", stored), found[0].suffix.lower()))
    taken: dict[str, object] = {}
    for what, name in [*names.items(), *((s, n) for s, (_, n) in clip_files.items())]:
        if taken.setdefault(name, what) != what:
            raise ExportError(f"two pages of the export would share the file name {name}: {taken[name]!r}, {what!r}")

    selection = crawl.selection
    shown = crawl.wh.data_dir.name
    policy = _policy()
    banner = _banner(shown, selection, now)

    def emit(name: str, data: bytes) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.bytes += len(data)

    for key, html in crawl.pages.items():
        page = names[key]

        def resolve(href: str, page: str = page) -> str | None:
            if href.startswith("#"):
                return href
            linked, fragment = page_key(href)
            if linked is None or linked not in names:
                return None
            return relative_href(names[linked], page, fragment)

        def resolve_clip(src: str, page: str = page) -> str | None:
            linked, _ = page_key(src)
            if linked is None or linked[0] != "clip" or linked[1] not in clip_files:
                return None
            return relative_href(clip_files[linked[1]][1], page)

        how = export_html.Rewrite(
            resolve=resolve,
            resolve_clip=resolve_clip,
            policy=policy,
            banner=banner,
            form_note=partial(_form_note, crawl, names, key, page),
        )
        emit(page, export_html.rewrite(_hide_data_dir(html, crawl.wh.data_dir), how).encode())
        written.pages[key[0]] += 1
    css = (explorer_app.HERE / "static" / "explorer.css").read_text() + EXPORT_CSS
    emit(names[STYLESHEET], css.encode())
    if any(has_cjk(html) for html in crawl.pages.values()):  # the stylesheet's Chinese font, beside it
        emit(str(Path(names[STYLESHEET]).with_name(explorer_app.CJK_FONT_FILE)), shipped_font().read_bytes())
    for path, name in clip_files.values():
        emit(name, path.read_bytes())
        written.clips += 1
    manifest = {
        "written_by": "eyt view --export",
        "data_dir": shown,
        "written_at": now.isoformat(timespec="seconds"),
        "targets": list(selection.targets),
        "all_targets": selection.all_targets,
        "pools": list(selection.pools),
        "all_pools": selection.all_pools,
        "pages": dict(sorted(written.pages.items())),
        "clips": written.clips,
    }
    emit(MARKER, (json.dumps(manifest, indent=2) + "\n").encode())


def _policy() -> str:
    """The server's Content-Security-Policy, with no form allowed (the export has none)."""
    directives = [d.strip() for d in explorer_app.HEADERS["Content-Security-Policy"].split(";") if d.strip()]
    kept = [d for d in directives if not d.startswith("form-action")]
    return "; ".join([*kept, "form-action 'none'"])


def _banner(shown: str, selection: Selection, now: datetime) -> str:
    def listed(names: tuple[str, ...], every: bool, what: str) -> str:
        return f"all {what} ({escape(', '.join(names))})" if every else escape(", ".join(names))

    return (
        '\n<div class="export-banner">A static export of the data directory <code>'
        f"{escape(shown)}</code>, written {escape(now.strftime('%Y-%m-%d %H:%M %Z').strip())} by "
        f"<code>eyt view --export</code>. Targets: {listed(selection.targets, selection.all_targets, 'targets')}; "
        f"pools: {listed(selection.pools, selection.all_pools, 'pools')}. A link to a page outside this selection "
        "is plain text.</div>"
    )


def _hide_data_dir(html: str, data_dir: Path) -> str:
    """The page with the data directory's full path written as its name alone (the header shows it)."""
    for spelled in {str(data_dir), str(data_dir.resolve())}:
        html = html.replace(str(jinja_escape(spelled)), str(jinja_escape(data_dir.name)))
    return html


def _form_note(crawl: _Crawl, names: dict[Key, str], key: Key, page: str, action: str, hidden: dict[str, str]) -> str:
    """The note that stands for a form: what it chose; for the paired differences, the pages of the export it
    would have led to (from the leaderboard each pair by the default metric, from a pair's page its other metrics)."""
    path = urlsplit(action).path
    what = FORM_WHAT.get("/seq" if path.startswith("/seq/") else path, "a form of the live explorer is left out")
    note = f'<p class="export-note">This static export is a fixed selection: {what}.'
    if path != "/pairs":
        return note + "</p>"
    chosen = [
        k
        for k in names
        if k[0] == "pairs"
        and k[5] == 1
        and k != key
        and all(hidden.get(f, v) == v for f, v in zip(("pool", "a", "b"), k[1:4]))
        and (hidden or k[4] == export_links.DEFAULT_METRIC)
    ]
    if not chosen:
        return note + "</p>"
    label = "By another metric" if hidden else "Paired differences in this export"
    items = ", ".join(
        f'<a class="pairs" href="{escape(relative_href(names[k], page))}">'
        + (escape(k[4]) if hidden else f"{escape(k[2])} vs {escape(k[3])} on {escape(k[1])} ({escape(k[4])})")
        + "</a>"
        for k in chosen
    )
    return f'{note}</p>\n<p class="export-note">{label}: {items}</p>'
