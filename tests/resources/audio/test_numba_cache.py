"""The project's numba cache (resources/audio/numba_cache.py): filled once by one process, then only read.

librosa's own cache in site-packages was corrupted by the two workers of the first `eyt run` compiling at once, so
every later run died of SIGSEGV in librosa.yin. These tests run what a user does: several processes asking for the
cache at once; tests/test_documented_commands.py runs the quickstart's two full runs in a row on one install and
checks that the second compiles nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from resources.audio import numba_cache

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent

# A stand-in fill for the lock test only: it records which process filled and takes long enough to overlap.
SLOW_FILL = (
    "import os, time, pathlib; d = pathlib.Path(os.environ['NUMBA_CACHE_DIR']); d.mkdir(parents=True);"
    " (d / 'filler').write_text(str(os.getpid())); time.sleep(1.5)"
)
ASK = "import sys; import resources.audio.numba_cache as m; m.WARM_CODE = sys.argv[1]; print(m.prepare())"


@pytest.mark.cli
def test_processes_asking_at_once_get_one_fill(tmp_path: Path) -> None:
    env = {**os.environ, numba_cache.ROOT_ENV: str(tmp_path / "root")}
    env.pop("NUMBA_CACHE_DIR", None)
    askers = [
        subprocess.Popen([sys.executable, "-c", ASK, SLOW_FILL], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    folders = {asker.communicate(timeout=60)[0].strip() for asker in askers}
    assert [asker.returncode for asker in askers] == [0, 0, 0, 0]
    assert len(folders) == 1
    folder = Path(folders.pop())
    assert folder.parent == tmp_path / "root" and folder.is_dir()
    manifest = json.loads((folder / numba_cache.MANIFEST).read_text())
    assert manifest["numba"] == numba_cache.key_parts()["numba"]
    # the filler's pid and the temporary folder: one fill, moved into place whole, nothing left beside it
    assert (folder / "filler").read_text().isdigit()
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted([folder.name, folder.name + ".lock"])
    # a later process finds the folder and fills nothing
    again = subprocess.run(
        [sys.executable, "-c", ASK, "raise SystemExit('filled twice')"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0 and again.stdout.strip() == str(folder), again.stderr


@pytest.mark.cli
def test_a_failed_fill_names_the_folder_and_leaves_nothing(tmp_path: Path) -> None:
    env = {**os.environ, numba_cache.ROOT_ENV: str(tmp_path / "root")}
    failed = subprocess.run(
        [sys.executable, "-c", ASK, "import os, pathlib; pathlib.Path(os.environ['NUMBA_CACHE_DIR']).mkdir(); 1/0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert failed.returncode != 0
    assert "NumbaCacheError" in failed.stderr and str(tmp_path / "root") in failed.stderr
    assert "ZeroDivisionError" in failed.stderr
    assert [p.name for p in (tmp_path / "root").iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.unit
def test_the_key_separates_installs_and_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    here = numba_cache.cache_folder()
    monkeypatch.setattr(numba_cache.sys, "prefix", "/elsewhere/venv")
    assert numba_cache.cache_folder() != here
    monkeypatch.undo()
    monkeypatch.setattr(numba_cache, "WARM_VERSION", numba_cache.WARM_VERSION + 1)
    assert numba_cache.cache_folder() != here
