"""A small driver for Debian's headless Chromium over the Chrome DevTools Protocol (CDP), for the UI test.

The Dagster UI is a React app that loads its data by GraphQL after the first render, so the test drives a
real browser and waits for what the page shows (`document.body.innerText`) rather than reading the HTML
shell. The websocket client is `websockets` (installed with dagster-webserver: uvicorn[standard]).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# What this machine's Chromium needs headless as root on a closed network: without the
# background-networking flags it keeps trying Google's hosts.
HEADLESS_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
]


class BrowserError(RuntimeError):
    pass


def chromium_path() -> str | None:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    return shutil.which("chromium")


class Chromium:
    """One headless Chromium with a fresh profile, driven through one page target."""

    def __init__(self, profile: Path, width: int = 1600, height: int = 1200, start_timeout: float = 30.0) -> None:
        from websockets.sync.client import connect

        binary = chromium_path()
        if binary is None:
            raise BrowserError(f"Chromium is not installed ({CHROMIUM}); `.ci/run` installs Debian's chromium")
        self.profile = Path(profile)
        self.profile.mkdir(parents=True, exist_ok=True)
        self.log = open(self.profile.parent / f"{self.profile.name}.log", "wb")
        # Port 0: Chromium picks a free port and writes it to DevToolsActivePort in the profile.
        self.process = subprocess.Popen(
            [
                binary,
                *HEADLESS_FLAGS,
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._ids = itertools.count(1)
        self.events: list[dict] | None = None  # set to a list to keep the CDP events that arrive during calls
        try:
            port = self._devtools_port(start_timeout)
            page = self._page_target(port, start_timeout)
            self.ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=start_timeout)
            self.call("Page.enable")
            self.call("Runtime.enable")
            self.set_viewport(width, height)
        except BaseException:
            self.close()
            raise

    def _devtools_port(self, timeout: float) -> int:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrowserError(f"Chromium exited with {self.process.returncode} at start; see {self.log.name}")
            if marker.exists():
                lines = marker.read_text().splitlines()
                if lines and lines[0].strip().isdigit():
                    return int(lines[0])
            time.sleep(0.1)
        raise BrowserError(f"Chromium did not open its DevTools port within {timeout:.0f} s; see {self.log.name}")

    @staticmethod
    def _page_target(port: int, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
                    pages = [t for t in json.load(response) if t.get("type") == "page"]
                if pages:
                    return pages[0]
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise BrowserError("Chromium shows no page target")
            time.sleep(0.2)

    def call(self, method: str, timeout: float = 30.0, **params):
        """Send one CDP command and return its result (events that arrive meanwhile are dropped, or kept in
        `events` when that is a list)."""
        message_id = next(self._ids)
        self.ws.send(json.dumps({"id": message_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError(f"no answer to {method} within {timeout:.0f} s")
            try:
                message = json.loads(self.ws.recv(timeout=remaining))
            except TimeoutError:
                continue
            if message.get("id") == message_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            if self.events is not None and "method" in message:
                self.events.append(message)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} raised {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def navigate(self, url: str) -> None:
        result = self.call("Page.navigate", url=url)
        if result.get("errorText"):
            raise BrowserError(f"navigation to {url} failed: {result['errorText']}")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_for_text(
        self,
        needles: list[str],
        absent: list[str] = (),
        timeout: float = 60.0,
        expression: str = "document.body ? document.body.innerText : ''",
    ) -> str:
        """Poll the rendered text (or another string expression) until every needle shows and none of `absent`
        does; return it. On timeout, fail (AssertionError) naming what is missing and what the page shows."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.evaluate(expression) or ""
            missing = [n for n in needles if n not in text]
            present = [a for a in absent if a in text]
            if not missing and not present:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"after {timeout:.0f} s the page {self.evaluate('location.href')} still lacks {missing}"
                    f"{f' and still shows {present}' if present else ''}; it shows: {text[:2000]!r}"
                )
            time.sleep(0.5)

    def wait_until(self, expression: str, predicate, what: str, timeout: float = 60.0):
        """Poll a JS expression until predicate(value) holds; return the value, or fail saying what was awaited."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if predicate(value):
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"after {timeout:.0f} s the page {self.evaluate('location.href')} shows no "
                    f"{what}; last value: {str(value)[:2000]!r}"
                )
            time.sleep(0.5)

    def set_viewport(self, width: int, height: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", timeout=60)["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:
                self.call("Browser.close", timeout=5)
            except Exception:
                pass
            ws.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        # Chromium's helpers (zygote, renderers) share its process group; make sure none outlives it.
        stop_group(self.process, timeout=5, grace=2)
        self.log.close()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stop_group(
    process: subprocess.Popen, timeout: float = 30.0, grace: float = 10.0
) -> tuple[signal.Signals, list[str]]:
    """Stop a process started with start_new_session=True and everything in its group: SIGTERM to the group,
    SIGKILL if the leader has not exited within `timeout`; members still alive `grace` seconds after the leader
    exited are killed too. Returns the signal that ended the leader and the members that had to be killed."""
    used = signal.SIGTERM
    for used, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, used)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    deadline = time.monotonic() + grace
    while (left := live_group_members(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while live_group_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
    return used, left


def live_group_members(pgid: int) -> list[str]:
    """The processes of a process group that are still alive (zombies awaiting their reaper left out)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(f"{entry.name} {stat[stat.index('(') + 1 : stat.rindex(')')]}")
    return members
