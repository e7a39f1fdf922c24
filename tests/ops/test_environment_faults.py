"""Faults of the machine get one line each, naming the path and the fix, with exit status 2, through the real CLI:
a read-only data directory (a read-only mount), a full disk (a small tmpfs), a DAGSTER_HOME that does not exist.
`eyt view` and `eyt report` still work on a read-only data directory.

Read-only and full disks are made for real: a read-only bind mount and a 2 MB tmpfs, which need root (as CI has);
without root the read-only case uses a folder without write permission, and the tmpfs case is skipped."""

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support.slates import write_slate

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
EYT = Path(sys.executable).parent / "eyt"
ROOTED = os.geteuid() == 0


def _eyt(env, *args, timeout=300):
    return subprocess.run([EYT, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def read_only(folder: Path):
    """`folder` as a read-only view: a read-only bind mount (root), else its permissions."""
    view = folder.parent / f"{folder.name}-ro"
    view.mkdir()
    if ROOTED:
        subprocess.run(["mount", "--bind", str(folder), str(view)], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], check=True)
            yield view
        finally:
            subprocess.run(["umount", str(view)], check=False)
    else:
        view.rmdir()
        os.symlink(folder, view)
        modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")] if p.is_dir()}
        for p in modes:
            p.chmod(0o555)
        try:
            yield view
        finally:
            for p, mode in modes.items():
                p.chmod(mode)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A data directory after a small `eyt run --no-speech`, and its environment."""
    tmp = tmp_path_factory.mktemp("faults")
    slate = write_slate(
        tmp,
        pools={"nemotron_usa": {"source": "fixture"}},
        dialogues_per_pool=2,
        t_max=3,
        targets=[{"id": "terse-baseline", "provider": "embedded", "model": "terse", "family": "eyt-baseline-target"}],
    )
    env = {**os.environ, "EYT_DATA_DIR": str(tmp / "data"), "EYT_SLATE": str(slate), "HF_HUB_OFFLINE": "1"}
    env.pop("DAGSTER_HOME", None)
    run = _eyt(env, "run", "--no-speech")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return tmp, env


@pytest.mark.slow
def test_a_read_only_data_directory(finished, tmp_path):
    tmp, env = finished
    with read_only(tmp / "data") as view:
        ro = {**env, "EYT_DATA_DIR": str(view)}
        for command in (("run", "--no-speech"), ("refresh", "--dry-run")):
            refused = _eyt(ro, *command)
            assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-3000:]
            [line] = refused.stderr.strip().splitlines()
            assert str(view) in line and "read-only" in line and "EYT_DATA_DIR" in line, line
            assert "Traceback" not in refused.stdout + refused.stderr
        report = _eyt(ro, "report", "--out", str(tmp_path / "report.html"))
        assert report.returncode == 0, report.stderr[-3000:]
        assert "in use by another process" not in report.stdout + report.stderr
        assert (tmp_path / "report.html").stat().st_size > 10_000
        port = 18000 + os.getpid() % 1000
        view_proc = subprocess.Popen(
            [EYT, "view", "--port", str(port)], cwd=ROOT, env=ro, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            page = None
            for _ in range(120):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                        page = response.read().decode()
                    break
                except OSError:
                    if view_proc.poll() is not None:
                        break
                    time.sleep(0.25)
            assert page is not None, view_proc.communicate(timeout=5)[1].decode()[-3000:]
            assert "terse-baseline" in page
        finally:
            view_proc.terminate()
            view_proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.skipif(not ROOTED, reason="mounting a tmpfs needs root")
def test_a_full_disk(finished, tmp_path):
    _, env = finished
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)], check=True)
    try:
        (small / "filler").write_bytes(b"\0" * (2 * 2**20 - 8192))
        full = _eyt({**env, "EYT_DATA_DIR": str(small / "data")}, "run", "--no-speech")
    finally:
        subprocess.run(["umount", str(small)], check=False)
    assert full.returncode == 2, full.stdout[-2000:] + full.stderr[-3000:]
    [line] = full.stderr.strip().splitlines()
    assert str(small / "data") in line and ("full" in line or "MB free" in line) and "EYT_DATA_DIR" in line, line


def test_a_dagster_home_that_does_not_exist(finished, tmp_path):
    _, env = finished
    missing = tmp_path / "no-such-home"
    for command in (("run", "--no-speech"), ("refresh", "--dry-run"), ("remove-target", "x", "--yes")):
        result = _eyt({**env, "DAGSTER_HOME": str(missing)}, *command)
        assert result.returncode == 2
        [line] = result.stderr.strip().splitlines()
        assert f"DAGSTER_HOME={missing} does not exist" in line and "mkdir -p" in line, line
    assert not missing.exists()
