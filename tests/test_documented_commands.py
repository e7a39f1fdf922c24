"""Every command the README and the docs tell a user to type, run as written.

The fenced `bash` and `cron` blocks of README.md and docs/*.md are read; each command in them runs in order, from
a fresh copy of the checkout (the tracked files, `.venv` linked to the virtualenv of this suite), with no activated
environment (PATH holds only the system's folders) and on a small slate that replaces the packaged one. Cron lines
run with cron's bare environment plus the block's variable lines, `/srv/eyt` standing for the fresh copy.

- A command that starts a server (`eyt dev`, `make dev`, `dagster dev`, `eyt view`, `make view`) is started in its
  own process group, must answer HTTP on its port (the one it names, or the free one `eyt view` prints), and is
  then stopped with no process of its group left behind.
- A command that appears several times runs once; a failure names every place that shows it.
- The commands this test cannot run are listed in SKIPPED with the reason; each entry must still match a
  documented command, so the list cannot hide one that was removed or reworded.

When a doc shows a command that no longer works, this test fails and names the file and line.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.slates import write_slate
from support.ui_browser import live_group_members, stop_group

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
CRON_INSTALL = "/srv/eyt"  # where the docs' crontabs say the clone lives
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
COMMAND_TIMEOUT_S = 600
SERVER_TIMEOUT_S = 180
# dagster dev stops its webserver, daemon and code server one after another; a code server that misses the stop
# ends itself when no heartbeat has come for 45 s (seen once in CI), so wait past that before calling it left behind.
SHUTDOWN_GRACE_S = 75

# pattern (searched in the command) -> why this test does not run it
SKIPPED = {
    r"^make test\b": "runs this suite, of which this test is a part",
    r"\beyt bench\b": "a minute or more of load on a latency server; tests/ops/test_bench.py runs `eyt bench` small",
    r"qwen3-8b": "names a remote model (qwen3-8b) whose endpoint and key the test does not have",
    r"\beyt remove-target\b": "deletes a target's results; tests/ops/test_operations.py runs it with and without --force",
}
# pattern (searched in the whole block) -> why no command of such a block runs
BLOCKS_SKIPPED = {
    r"/tmp/llama": "downloads and builds llama.cpp (about 10 minutes); bench/real_server_check.py is a manual check"
}
SERVER = re.compile(r"(^|/|\s)((eyt|dagster|make) dev|(eyt|make) view)\b")
PORT = re.compile(r"(?:-p|--port)[ =](\d+)")
PRINTED_PORT = re.compile(r"http://127\.0\.0\.1:(\d+)/")  # `eyt view` without --port picks a free one and prints it
DEFAULT_PORT = 3000


def _port(command: Command, log: Path) -> int | None:
    """The port the server answers on: the one the command names, the one `eyt view` printed (None until then), or
    Dagster's default."""
    if m := PORT.search(command.text):
        return int(m.group(1))
    if re.search(r"\bview\b", command.text):
        m = PRINTED_PORT.search(log.read_text(errors="replace")) if log.exists() else None
        return int(m.group(1)) if m else None
    return DEFAULT_PORT


@dataclass
class Command:
    text: str
    places: list[str] = field(default_factory=list)  # "README.md:25"
    setup: tuple[str, ...] = ()  # the block's earlier export/eval lines, run first in the same shell
    env: dict[str, str] = field(default_factory=dict)  # a crontab's variable lines
    cron: bool = False
    block: str = ""  # the whole fenced block the command stands in


def _logical_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join backslash continuations; drop blank and comment lines. Each item: (first line number, text)."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in lines:
        line = raw.rstrip()
        if pending is not None:
            start, text = pending
            line = f"{text} {line.strip()}"
            number = start
        if line.endswith("\\"):
            pending = (number, line[:-1].rstrip())
            continue
        pending = None
        if line.strip() and not line.strip().startswith("#"):
            out.append((number, line.strip()))
    return out


def documented_commands(pages: list[Path] = PAGES, root: Path = ROOT) -> list[Command]:
    """The commands of every fenced shell or cron block, in page order, each distinct command once."""
    found: dict[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]], Command] = {}
    for page in pages:
        name = str(page.relative_to(root))
        block: list[tuple[int, str]] | None = None
        language = ""
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            fence = re.match(r"^\s*```\s*([\w-]*)\s*$", line)
            if fence and block is None:
                block, language = [], fence.group(1)
                continue
            if fence and block is not None:
                if language in SHELL_LANGUAGES or language == "cron":
                    for line_number, command in _block_commands(block, language == "cron"):
                        key = (_without_comment(command.text), command.setup, tuple(sorted(command.env.items())))
                        kept = found.setdefault(key, command)
                        kept.places.append(f"{name}:{line_number}")
                block = None
                continue
            if block is not None:
                block.append((number, line))
    return list(found.values())


def _without_comment(text: str) -> str:
    """The command without a trailing `# ...` comment (one outside quotes), to tell repeated commands apart."""
    return re.sub(r"\s+#[^'\"]*$", "", text)


def _block_commands(block: list[tuple[int, str]], cron: bool) -> list[tuple[int, Command]]:
    whole = "\n".join(text for _, text in block)
    commands: list[tuple[int, Command]] = []
    setup: list[str] = []
    env: dict[str, str] = {}
    for number, text in _logical_lines(block):
        if cron:
            variable = re.match(r"^([A-Z_][A-Z0-9_]*)=(.*)$", text)
            if variable:
                env[variable.group(1)] = variable.group(2)
                continue
            text = text.split(None, 5)[5]  # minute hour day month weekday command
        commands.append((number, Command(text=text, setup=tuple(setup), env=dict(env), cron=cron, block=whole)))
        if re.match(r"^(export|eval)\b", text):
            setup.append(text)
    return commands


def skip_reason(command: Command) -> str | None:
    by_command = (why for pattern, why in SKIPPED.items() if re.search(pattern, command.text))
    by_block = (why for pattern, why in BLOCKS_SKIPPED.items() if re.search(pattern, command.block))
    return next(by_command, None) or next(by_block, None)


def fresh_checkout(dest: Path, slate_text: str) -> Path:
    """The tracked (and new, not ignored) files of the checkout, `.venv` linked to this suite's virtualenv, and the
    packaged slate replaced by a small one (so `cp eyt_dagster/slates/default.yaml ...` copies it too)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for relative in filter(None, listed.split("\0")):
        source = ROOT / relative
        if source.is_file():
            target = dest / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (dest / ".venv").symlink_to(Path(sys.prefix))
    # The Makefile reinstalls when pyproject.toml is newer than the install's marker; the copy is of this very
    # tree, so give it the marker's time: a reinstall from the copy would point the suite's editable install at it.
    installed = Path(sys.prefix) / ".installed"
    assert installed.exists(), f"{installed} is missing: run the suite through `make test`, which installs .venv"
    stamp = installed.stat().st_mtime_ns - 1_000_000_000  # strictly older: make compares to the nanosecond
    os.utime(dest / "pyproject.toml", ns=(stamp, stamp))
    (dest / "eyt_dagster" / "slates" / "default.yaml").write_text(slate_text)
    (dest / "my_slate.yaml").write_text(slate_text)  # the copy docs/remote-models.md tells a user to make
    return dest


def _environment(checkout: Path, command: Command) -> dict[str, str]:
    base = {"PATH": SYSTEM_PATH, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8", "HF_HUB_OFFLINE": "1"}
    base.update({k: v for k, v in os.environ.items() if k.startswith(("XDG_", "EYT_NUMBA"))})
    if command.cron:  # cron's environment: its own bare one and the crontab's lines
        base.update({k: v.replace(CRON_INSTALL, str(checkout)) for k, v in command.env.items()})
    # The small slate and this checkout's data directory. The code runs from the virtualenv's editable install,
    # so its packaged slate is the source tree's; a user's clone has them in one place.
    base.setdefault("EYT_SLATE", str(checkout / "eyt_dagster" / "slates" / "default.yaml"))
    base.setdefault("EYT_DATA_DIR", str(checkout / "data"))
    return base


def _script(checkout: Path, command: Command, server: bool = False) -> str:
    text = command.text.replace(CRON_INSTALL, str(checkout)) if command.cron else command.text
    # A server's command replaces the shell, so that the stop signal reaches it as it would from a terminal.
    return "\n".join(["set -e", *command.setup, f"exec {text}" if server else text])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as reply:
            return reply.status == 200
    except (OSError, urllib.error.URLError):
        return False


def _run_server(checkout: Path, command: Command, log: Path) -> str | None:
    """Start, wait for an HTTP answer, stop: None when all went well, else what went wrong."""
    port = _port(command, log)
    if port is not None and _answers(port):
        return f"port {port} is already taken by another server before the command started"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["bash", "-c", _script(checkout, command, server=True)],
            cwd=checkout,
            env=_environment(checkout, command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    problem = None
    deadline = time.monotonic() + SERVER_TIMEOUT_S
    try:
        while port is None or not _answers(port):
            port = port or _port(command, log)
            if process.poll() is not None:
                problem = f"exited with {process.returncode} before answering on port {port}"
                break
            if time.monotonic() > deadline:
                problem = f"did not answer on port {port} within {SERVER_TIMEOUT_S} s"
                break
            time.sleep(1)
    finally:
        _, killed = stop_group(process, grace=SHUTDOWN_GRACE_S)
    left = live_group_members(process.pid)
    if problem is None and (killed or left):
        problem = f"left processes behind after SIGTERM: {killed or left}"
    if problem is None and port is not None and _answers(port):
        problem = f"port {port} still answers after the server was stopped"
    return None if problem is None else f"{problem}\n{log.read_text(errors='replace')[-2000:]}"


def _run(checkout: Path, command: Command) -> str | None:
    done = subprocess.run(
        ["bash", "-c", _script(checkout, command)],
        cwd=checkout,
        env=_environment(checkout, command),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    if done.returncode == 0:
        return None
    return f"exited with {done.returncode}:\n{done.stdout[-1500:]}\n{done.stderr[-2500:]}"


@pytest.mark.unit
def test_the_parser_reads_blocks_continuations_setup_and_crontabs(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        'text\n```bash\n# a comment\neval "$(.venv/bin/eyt env)"\n.venv/bin/eyt run \\\n    --target a  # why\n\n'
        "```\n```python\nprint('not a command')\n```\n```cron\nEYT_DATA_DIR=/srv/eyt/data\n"
        "0 2 * * *  cd /srv/eyt && .venv/bin/eyt refresh\n```\n```bash\n.venv/bin/eyt run --target a  # why\n```\n"
    )
    commands = documented_commands([page], tmp_path)
    assert [c.text for c in commands] == [
        'eval "$(.venv/bin/eyt env)"',
        ".venv/bin/eyt run --target a  # why",
        "cd /srv/eyt && .venv/bin/eyt refresh",
        ".venv/bin/eyt run --target a  # why",
    ]
    assert commands[0].places == ["page.md:4"] and commands[1].places == ["page.md:5"]
    assert commands[1].setup == ('eval "$(.venv/bin/eyt env)"',) and commands[3].setup == ()
    assert commands[2].cron and commands[2].env == {"EYT_DATA_DIR": "/srv/eyt/data"}
    assert SERVER.search(".venv/bin/eyt dev") and SERVER.search("make dev") and not SERVER.search("eyt devices")
    assert SERVER.search(".venv/bin/eyt view --port 8080") and SERVER.search("make view")


@pytest.mark.unit
def test_every_skip_reason_still_matches_a_documented_command() -> None:
    commands = documented_commands()
    for pattern in SKIPPED:
        assert any(re.search(pattern, c.text) for c in commands), f"SKIPPED names {pattern!r}, which no doc shows now"
    for pattern in BLOCKS_SKIPPED:
        assert any(re.search(pattern, c.block) for c in commands), f"{pattern!r} is in no documented block now"
    # the README's quickstart and UI commands are among those run, not skipped
    texts = {c.text.split("#")[0].strip() for c in commands if skip_reason(c) is None}
    assert {"make run", ".venv/bin/eyt dev"} <= texts


def _files(folder: Path, pattern: str = "*") -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob(pattern) if p.is_file()}


@pytest.mark.cli
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_documented_command_runs_as_written(tmp_path: Path) -> None:
    """Also what a user of one install does: the quickstart's `make run`, then `eyt run` again, each a full run with
    SpeechEQ's builds side by side in two workers. After the first, librosa's compiled kernels are all in the
    project's cache folder (resources/audio/numba_cache.py): no later command compiles anything into it, and none writes
    librosa's own cache in site-packages (two processes compiling there at once corrupted it)."""
    import librosa

    from resources.audio import numba_cache

    slate = write_slate(tmp_path, dialogues_per_pool=2, pool_size=12, cross_judge_dialogues=2)
    checkout = fresh_checkout(tmp_path / "clone", slate.read_text())
    site_cache = Path(librosa.__file__).parent
    site_before = _files(site_cache, "*.nb[ic]")
    compiled: dict[str, tuple[int, int]] | None = None
    failures, ran = [], []
    for command in documented_commands():
        if skip_reason(command):
            continue
        started = time.monotonic()
        if SERVER.search(command.text):
            problem = _run_server(checkout, command, tmp_path / f"server-{len(ran)}.log")
        else:
            problem = _run(checkout, command)
        ran.append(f"{time.monotonic() - started:6.1f} s  {command.text}")
        if problem:
            failures.append(f"{', '.join(command.places)}: `{command.text}` {problem}")
        if compiled is None and numba_cache.cache_folder().is_dir():
            compiled = _files(numba_cache.cache_folder())  # filled by the first command that needed librosa
    print("\n".join(ran))
    (tmp_path / "report.txt").write_text("\n".join(ran) + "\n\n" + "\n\n".join(failures))
    assert not failures, "documented commands that fail as written:\n\n" + "\n\n".join(failures)
    source = subprocess.run(
        [sys.executable, "-c", "import eyt_dagster; print(eyt_dagster.__file__)"],
        cwd="/",
        capture_output=True,
        text=True,
    ).stdout
    assert source.startswith(str(ROOT)), f"a command reinstalled the project from the copy: {source}"
    assert compiled is not None and _files(numba_cache.cache_folder()) == compiled, "a later command compiled again"
    assert _files(site_cache, "*.nb[ic]") == site_before, "a command wrote librosa's own numba cache"


@pytest.mark.cli
@pytest.mark.parametrize("automation", [False, True])
def test_eyt_dev_starts_dagster_from_its_own_environment(monkeypatch, tmp_path: Path, automation: bool) -> None:
    """`eyt dev` starts what `dagster dev` starts (webserver, daemon, code server) through the function Dagster's own
    commands call, not the superseded command, in this interpreter (no `dagster` on PATH needed), from the
    instance's folder (so Dagster sees the dagster.yaml there as DAGSTER_HOME's own), on this project's instance; `--automation` switches the automation sensor on."""
    import dagster._cli.dev

    from eyt_dagster.automation import AUTOMATION_ENV
    from eyt_dagster.ops import cli

    calls = []
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("EYT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv(AUTOMATION_ENV, "off")  # restored after the test, as every variable `eyt dev` sets
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        dagster._cli.dev, "dev_command_impl", lambda **kw: calls.append((kw, dict(os.environ), os.getcwd()))
    )
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)  # keep pytest's own Ctrl-C handler
    assert cli.main(["dev", "--port", "3123", *(["--automation"] if automation else [])]) == 0
    [(options, env, cwd)] = calls
    assert options["port"] == "3123" and options["workspace_opts"].workspace == [str(ROOT / "workspace.yaml")]
    assert not options["use_legacy_code_server_behavior"] and cwd == env["DAGSTER_HOME"]
    assert env["DAGSTER_HOME"] == str(tmp_path / "data" / "dagster_home")
    assert env["EYT_DATA_DIR"] == str(tmp_path / "data")
    assert (env.get(AUTOMATION_ENV) == "on") is automation
