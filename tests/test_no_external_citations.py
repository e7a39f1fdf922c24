"""Every citation in the repository points at something a reader of the repository can open.

The project was built from notes and a tracker that are not part of the repository. A comment, docstring,
prompt, report string or doc that cites them ("SPEC §3.6", "DAGSTER_NOTES.md", "(issue 5)") sends the reader
nowhere; the content belongs in docs/ (docs/index.md maps it) and the citation should name that file, or a
paper's equation or table. Public upstream links (a GitHub URL of Dagster or DuckDB) are fine.

Checks over every tracked text file:
- no citation of the outside documents or of a project issue number;
- every path to a Markdown file that a file mentions (`docs/method.md`, `sql/README.md`) exists, and every
  `docs/<name>.md#<anchor>` names a heading of that file (GitHub's anchor rule);
- every relative link of a Markdown file (`[text](method.md#seq)`) leads to a file and heading that exist;
- docs/index.md links every page of docs/, so the map stays complete.
"""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".sql",
    ".yaml",
    ".yml",
    ".toml",
    ".cfg",
    ".ini",
    ".txt",
    ".html",
    ".j2",
    ".json",
    ".csv",
    ".sh",
    ".cron",
    "",
}

# Documents that are not in the repository. Written so that this file does not match itself.
OUTSIDE_DOCUMENTS = [
    (re.compile(r"\bSPEC(?:\.md)?\s*§"), "a section of the design notes (SPEC §...)"),
    (re.compile(r"\bSPEC\.md\b"), "the design notes (SPEC.md)"),
    (re.compile(r"\bDAGSTER" r"_NOTES\b"), "the Dagster notes"),
    (re.compile(r"(?<![\w_])OFFLINE\.md\b"), "the offline-components notes"),
    (re.compile(r"(?<![\w_])STYLE\.md\b"), "the style notes"),
]
# A project issue or ticket number: "(issue 6)", "issue 5", "issues 3-4", "ticket #12", "PR #7". A line with a
# public URL (https://github.com/owner/repo/issues/N) or an "owner/repo#N" reference is an upstream citation.
ISSUE_NUMBER = re.compile(r"(?i)\b(?:issues?|tickets?|bugs?|PR|pull request)\s*#?\d+\b")
UPSTREAM = re.compile(r"https?://|\b[\w.-]+/[\w.-]+#\d+\b")
# A path to a Markdown file: at least one folder, or a bare name at the repository root.
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
MD_PATH = re.compile(r"(?<![\w/.:-])((?:\.\./|\./)?(?:[\w.-]+/)+[\w.-]+\.md|README\.md)(?:#([\w-]+))?")


@lru_cache(maxsize=1)
def tracked_text_files() -> tuple[Path, ...]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:  # an sdist or a copy without .git
        pytest.skip(f"not a git checkout ({exc})")
    files = []
    for name in out.decode().split("\0"):
        path = ROOT / name
        if not name or name == THIS or path.suffix.lower() not in TEXT_SUFFIXES or not path.is_file():
            continue
        files.append(path)
    return tuple(files)


def lines_of(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        return []


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in lines_of(path):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        count = seen.get(base, 0)
        anchors.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return anchors


def test_slug_follows_githubs_rule() -> None:
    assert slug("Warm-up weights") == "warm-up-weights"
    assert slug("Schema `speech`") == "schema-speech"
    assert slug("EQ-i 2.0: subscales and composites") == "eq-i-20-subscales-and-composites"
    assert slug("Trajectory metrics (Eq. 1, Tables 6 and 13)") == "trajectory-metrics-eq-1-tables-6-and-13"


def test_the_patterns_catch_what_they_are_meant_to() -> None:
    spec = "SP" + "EC"
    for bad in [
        f"see {spec} §3.6",
        f"({spec}.md §3.4)",
        "(DAGSTER" + "_NOTES.md)",
        "measured (OFF" + "LINE.md)",
        "STY" + "LE.md says",
        "Asset checks (iss" + "ue 6)",
        "Tick" + "et #12",
    ]:
        hits = [why for pattern, why in OUTSIDE_DOCUMENTS if pattern.search(bad)]
        issue = ISSUE_NUMBER.search(bad) and not UPSTREAM.search(bad)
        assert hits or issue, bad
    for fine in [
        "HF_HUB_OFFLINE=1",
        "color:#222",
        "a rerun re-issues no finished call",
        "https://github.com/dagster-io/dagster/issues/18746",
        "dagster-io/dagster#18746 (lock)",
        "spec = response_format['json_schema']",
    ]:
        assert not any(p.search(fine) for p, _ in OUTSIDE_DOCUMENTS), fine
        assert not (ISSUE_NUMBER.search(fine) and not UPSTREAM.search(fine)), fine


def test_no_citation_of_documents_outside_the_repository() -> None:
    found = []
    for path in tracked_text_files():
        for number, line in enumerate(lines_of(path), 1):
            where = f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
            found += [f"{where}  <- cites {why}" for pattern, why in OUTSIDE_DOCUMENTS if pattern.search(line)]
            if ISSUE_NUMBER.search(line) and not UPSTREAM.search(line):
                found.append(f"{where}  <- cites a project issue number")
    assert not found, "cite a docs/ file (see docs/index.md) or a paper's equation/table instead:\n" + "\n".join(found)


def test_every_cited_markdown_file_and_anchor_exists() -> None:
    missing = []
    for path in tracked_text_files():
        for number, line in enumerate(lines_of(path), 1):
            for match in MD_PATH.finditer(line):
                name, anchor = match.group(1), match.group(2)
                candidates = [ROOT / name, path.parent / name]
                target = next((c.resolve() for c in candidates if c.is_file()), None)
                where = f"{path.relative_to(ROOT)}:{number}"
                if target is None:
                    missing.append(f"{where}: {name} does not exist")
                elif anchor and target.suffix == ".md" and anchor not in anchors_of(target):
                    missing.append(f"{where}: {name} has no heading for #{anchor}")
    assert not missing, "\n".join(missing)


def test_every_relative_markdown_link_resolves() -> None:
    broken = []
    for path in tracked_text_files():
        if path.suffix != ".md":
            continue
        for number, line in enumerate(lines_of(path), 1):
            for target in MD_LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                name, _, anchor = target.partition("#")
                resolved = (path.parent / name).resolve() if name else path
                where = f"{path.relative_to(ROOT)}:{number}: ({target})"
                if not resolved.exists():
                    broken.append(f"{where} leads to no file")
                elif anchor and resolved.suffix == ".md" and anchor not in anchors_of(resolved):
                    broken.append(f"{where} names no heading of {resolved.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


def test_the_docs_index_links_every_page() -> None:
    index = ROOT / "docs" / "index.md"
    linked = {target.partition("#")[0] for target in MD_LINK.findall(index.read_text(encoding="utf-8"))}
    pages = {p.name for p in (ROOT / "docs").glob("*.md") if p.name != "index.md"}
    assert not pages - linked, f"add these pages to docs/index.md: {sorted(pages - linked)}"
