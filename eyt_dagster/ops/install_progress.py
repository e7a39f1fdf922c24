"""The quickstart's install, shown as it goes: `python eyt_dagster/ops/install_progress.py <pip install arguments>`
runs `pip install` with them and prints one short line per package as pip takes it up (its name, version and
download size), a line when the installing itself starts (unpacking torch alone takes a minute) and one when it is
done. pip's own output is several lines per package with progress bars; `-qq`, as the Makefile used, printed nothing
for the five minutes of a first install.

Run by the Makefile with the new virtualenv's Python before the project is installed, so it imports nothing of
the project (the standard library only). pip's warnings and errors (its stderr) pass through, except that a warning
pip repeats for every package (a package location of pip's configuration that does not exist) is shown once and
then counted; when pip fails, its last lines of output are printed too. The exit status is pip's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from urllib.parse import unquote

# pip's lines (its stdout, without a terminal): what each one says
_COLLECTING = re.compile(r"^Collecting (\S+)")
_FETCHING = re.compile(r"^\s+(Downloading|Using cached) (\S+)(?: \(([^)]*)\))?")
_PROCESSING = re.compile(r"^Processing (\S+)")
_OBTAINING = re.compile(r"^Obtaining (\S+)")
_STARTED = re.compile(r"^\s+((?:Installing build dependencies|Building editable for|Building wheel for)[^:]*): started")
_INSTALLING = re.compile(r"^Installing collected packages: (.*)")
_INSTALLED = re.compile(r"^Successfully installed (.*)")
_SATISFIED = re.compile(r"^Requirement already satisfied")
_ARCHIVE = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>\d[^-]*?)(?:-[^/]*)?\.(?:whl|tar\.gz|zip)$")
TAIL_LINES = 40  # pip's output kept to print when it fails
# pip's warnings that come once per package, for the same cause (its configuration names a location that is missing)
_REPEATED_WARNINGS = (re.compile(r"^WARNING: Location '.*' is ignored: it is neither a file nor a directory\.$"),)


def _package(spec_or_path: str) -> str:
    """'torch 2.13.0+cpu' from a wheel's or an archive's path, 'charset_normalizer' from a requirement."""
    base = unquote(spec_or_path.rstrip("/").rsplit("/", 1)[-1])  # a URL's file name: 2.13.0%2Bcpu -> 2.13.0+cpu
    found = _ARCHIVE.match(base)
    if found:
        return f"{found['name']} {found['version']}"
    return re.split(r"[<>=!~;\[( ]", spec_or_path, maxsplit=1)[0]


class PipLines:
    """pip's output lines in, the short lines out (`feed` per line, `end` once)."""

    def __init__(self) -> None:
        self.packages = 0
        self.satisfied = 0
        self.installed = False
        self._pending: str | None = None  # a package named by `Collecting`, waiting for its download line

    def _numbered(self, text: str) -> str:
        self.packages += 1
        return f"  [{self.packages}] {text}"

    def _flush(self) -> Iterator[str]:
        if self._pending is not None:
            yield self._numbered(self._pending)
            self._pending = None

    def feed(self, line: str) -> Iterator[str]:
        line = line.rstrip("\n")
        if found := _FETCHING.match(line):
            how, path, size = found.groups()
            if self._pending is not None:
                what = "download" if how == "Downloading" else "cached"
                name = _package(path) if _ARCHIVE.match(path.rsplit("/", 1)[-1]) else self._pending
                self._pending = None
                yield self._numbered(f"{name} ({size + ' ' if size else ''}{what})")
            return
        yield from self._flush()
        if found := _COLLECTING.match(line):
            self._pending = _package(found[1])
        elif found := _PROCESSING.match(line):
            yield self._numbered(_package(found[1]))
        elif found := _OBTAINING.match(line):
            yield f"  {found[1].removeprefix('file://')}: this checkout, installed editable"
        elif found := _STARTED.match(line):
            yield f"  {found[1][0].lower()}{found[1][1:]} ..."
        elif found := _INSTALLING.match(line):
            names = [p.strip() for p in found[1].split(",") if p.strip()]
            slow = "; torch alone takes a minute" if "torch" in names else ""
            yield f"  installing {len(names)} package(s) into the virtualenv (unpacking them{slow}) ..."
        elif found := _INSTALLED.match(line):
            self.installed = True
            yield f"  installed {len(found[1].split())} package(s)"
        elif _SATISFIED.match(line):
            self.satisfied += 1

    def end(self, ok: bool = True) -> Iterator[str]:
        yield from self._flush()
        if ok and not self.packages and not self.installed:
            yield f"  nothing new to install ({self.satisfied} requirement(s) already satisfied)"


class PipWarnings:
    """pip's stderr lines in, what to show out: a per-package warning of _REPEATED_WARNINGS once, then counted."""

    def __init__(self) -> None:
        self.repeats = 0

    def feed(self, line: str) -> str | None:
        text = line.rstrip("\n")
        if not any(rule.match(text) for rule in _REPEATED_WARNINGS):
            return text
        self.repeats += 1
        if self.repeats == 1:
            return f"{text} (pip says this for each package: further ones are counted, see `pip config list`)"
        return None

    def end(self) -> str | None:
        more = self.repeats - 1
        return (
            f"  (pip repeated that warning about a missing package location {more} more time(s))" if more > 0 else None
        )


def short_lines(lines: Iterable[str]) -> Iterator[str]:
    """The short lines of a whole pip output."""
    state = PipLines()
    for line in lines:
        yield from state.feed(line)
    yield from state.end()


def main(argv: Sequence[str], pip: Sequence[str] | None = None) -> int:
    """`pip install <argv>` (`pip`: the command to run instead of this Python's pip), its stdout shortened."""
    command = [*(pip or [sys.executable, "-m", "pip"]), "install", "--progress-bar", "off", *argv]
    state, tail = PipLines(), deque[str](maxlen=TAIL_LINES)
    warnings = PipWarnings()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # pip's lines as it writes them, not in blocks through the pipe
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, env=env
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        errors = proc.stderr

        def pass_errors() -> None:
            for line in errors:
                shown = warnings.feed(line)
                if shown is not None:
                    print(shown, file=sys.stderr, flush=True)

        reader = threading.Thread(target=pass_errors, daemon=True)
        reader.start()
        for line in proc.stdout:
            tail.append(line)
            for short in state.feed(line):
                print(short, flush=True)
        reader.join()
    for short in state.end(ok=proc.returncode == 0):
        print(short, flush=True)
    if (counted := warnings.end()) is not None:
        print(counted, file=sys.stderr, flush=True)
    if proc.returncode != 0:
        print(f"pip install failed (exit {proc.returncode}); its last lines of output:", file=sys.stderr)
        sys.stderr.write("".join(tail))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
