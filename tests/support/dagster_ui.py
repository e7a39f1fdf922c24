"""`eyt dev` (the Dagster UI and daemon on this project's instance) as a test starts it: on a free localhost port,
in its own process group, its output in files; waiting until the code location has loaded, asking the webserver's
GraphQL API, and stopping it by process group."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.ui_browser import stop_group

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SERVER_TIMEOUT = 120  # the UI answers in 20-35 s on 2 cores when the code location loads


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def graphql(base: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{base}/graphql", data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = json.load(response)
    assert "errors" not in answer, answer["errors"]
    return answer["data"]


def tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


@contextmanager
def dagster_dev(
    env: dict[str, str], log: Path, errors: Path | None = None
) -> Iterator[tuple[subprocess.Popen, str, int]]:
    """`eyt dev` on a free localhost port, in its own process group; yields (process, base URL, port). Its standard
    output goes to `log`, its standard error too unless `errors` names a file of its own. Always stopped on exit:
    SIGTERM to the group, SIGKILL after 30 s; `process.stopped_by` and `process.killed` say how it went."""
    port = free_port()
    with open(log, "wb") as out, open(errors or log, "ab") as err:
        process = subprocess.Popen(
            [BIN / "eyt", "dev", "--port", str(port)],  # the README's command
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err if errors else subprocess.STDOUT,
            start_new_session=True,
            # A shell that starts pytest in the background leaves SIGINT ignored, and the server stops its
            # children with SIGINT: give the server the default handler so SIGTERM shuts it down cleanly.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    process.stopped_by, process.killed = None, []  # type: ignore[attr-defined]
    try:
        yield process, f"http://127.0.0.1:{port}", port
    finally:
        process.stopped_by, process.killed = stop_group(process)  # type: ignore[attr-defined]


def wait_until_loaded(process: subprocess.Popen, base: str, log: Path) -> None:
    """Wait for the webserver and for the code location `eyt_dagster` to have loaded."""
    deadline, status = time.monotonic() + SERVER_TIMEOUT, "no answer"
    query = (
        "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus "
        "locationOrLoadError { __typename ... on PythonError { message } } } } } }"
    )
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"eyt dev exited with {process.returncode}:\n{tail(log)}")
        try:
            entries = graphql(base, query)["workspaceOrError"]["locationEntries"]
        except (OSError, AssertionError) as exc:
            status = repr(exc)
        else:
            entry = next((e for e in entries if e["name"] == "eyt_dagster"), None)
            status = json.dumps(entry)
            if entry and entry["loadStatus"] == "LOADED":
                loaded = entry["locationOrLoadError"]
                assert loaded["__typename"] == "RepositoryLocation", f"the code location failed to load: {loaded}"
                return
        time.sleep(1)
    pytest.fail(f"eyt dev did not load the code location within {SERVER_TIMEOUT} s (last: {status}):\n{tail(log)}")
