"""The clip analysis store (resources/audio/clip_analysis.py): each clip's target-independent analysis computed once,
keyed by the clip's bytes and what decides the result, shared by threads, stores (reruns) and processes; a clip
that cannot be read fails alone and is never stored."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from resources.audio.audio_features import AudioFeatureError
from resources.audio.clip_analysis import (
    CLIP_ANALYSIS_DIR,
    ClipAnalysis,
    ClipAnalysisStore,
    ClipUnusableError,
    folder_identity,
)

ROOT = Path(__file__).resolve().parents[3]


class Counting:
    """A stand-in analysis body that records every clip it was run on (the store is what is tested here)."""

    def __init__(self, fail_on: str | None = None, delay_s: float = 0.0) -> None:
        self.calls: list[str] = []
        self.fail_on = fail_on
        self.delay_s = delay_s
        self._lock = threading.Lock()

    def __call__(self, path: str) -> dict[str, float]:
        with self._lock:
            self.calls.append(path)
        time.sleep(self.delay_s)
        data = Path(path).read_bytes()
        if self.fail_on is not None and self.fail_on in data.decode(errors="replace"):
            raise AudioFeatureError(f"{path}: audio is silent (peak below -80 dBFS)")
        return expected(path)


def expected(path: str | Path) -> dict[str, float]:
    """What Counting gives for a clip: floats whose shortest repr has 17 digits, which must come back from the
    file bit for bit."""
    return {"third": len(Path(path).read_bytes()) / 3.0, "tenth": 0.1 + 0.2, "tiny": 5e-324}


def analysis(compute, **identity) -> ClipAnalysis[dict[str, float]]:
    return ClipAnalysis(name="measure", identity={"code_version": 1, **identity}, compute=compute)


def clip(folder: Path, name: str, content: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(content)
    return path


@pytest.mark.unit
def test_a_clip_is_computed_once_and_served_to_every_later_reader(tmp_path: Path) -> None:
    body = Counting()
    spec = analysis(body)
    a = clip(tmp_path / "clips", "a.wav", b"RIFF first clip")
    first = ClipAnalysisStore(tmp_path / "data")
    target_one, target_two = first.session(), first.session()
    value = target_one.get(spec, a)
    assert value == expected(a) and len(body.calls) == 1
    assert target_one.get(spec, str(a)) == value and target_two.get(spec, a) == value and len(body.calls) == 1
    assert target_one.counts() == {spec.folder: {"computed": 1, "reused": 0}}
    assert target_two.counts() == {spec.folder: {"computed": 0, "reused": 1}}
    # the file: content-addressed by the clip's sha256, under the analysis folder, with its identity beside it
    sha = hashlib.sha256(a.read_bytes()).hexdigest()
    stored = tmp_path / "data" / CLIP_ANALYSIS_DIR / spec.folder / sha[:2] / f"{sha}.json"
    assert stored == first.result_path(spec, sha) and json.loads(stored.read_text())["result"] == value
    manifest = json.loads((stored.parents[1] / "analysis.json").read_text())
    assert manifest == {"name": "measure", "identity": {"code_version": 1}}
    # a rerun (a new store, as a new process has) reads the file; the floats come back exactly
    rerun = ClipAnalysisStore(tmp_path / "data").session()
    again = rerun.get(spec, a)
    assert again == value and [again[k].hex() for k in again] == [value[k].hex() for k in value]
    assert rerun.counts() == {spec.folder: {"computed": 0, "reused": 1}} and len(body.calls) == 1
    # the same bytes under another name are the same clip; other bytes, or another identity, are not
    copy = clip(tmp_path / "elsewhere", "renamed.wav", a.read_bytes())
    assert rerun.get(spec, copy) == value and len(body.calls) == 1
    b = clip(tmp_path / "clips", "b.wav", b"RIFF second clip, longer")
    assert rerun.get(spec, b) == expected(b) != value and len(body.calls) == 2
    newer = analysis(body, code_version=2)
    assert newer.folder != spec.folder and rerun.get(newer, a) == value and len(body.calls) == 3


@pytest.mark.unit
def test_a_rewritten_clip_is_analysed_again(tmp_path: Path) -> None:
    body = Counting()
    spec, store = analysis(body), ClipAnalysisStore(tmp_path / "data")
    path = clip(tmp_path, "a.wav", b"one")
    before = store.get(spec, path)
    path.write_bytes(b"three")  # the hash is kept per (path, mtime, size), so a rewrite is hashed again
    assert store.get(spec, path) != before and len(body.calls) == 2


@pytest.mark.unit
def test_an_unusable_clip_fails_alone_names_the_clip_and_is_not_stored(tmp_path: Path) -> None:
    body = Counting(fail_on="silence")
    spec, store = analysis(body), ClipAnalysisStore(tmp_path / "data")
    bad = clip(tmp_path / "clips", "bad.wav", b"RIFF silence")
    with pytest.raises(ClipUnusableError, match=r"^measure: .*bad\.wav: audio is silent"):
        store.get(spec, bad)
    assert not list((tmp_path / "data").rglob("*.json"))  # neither a result nor a manifest
    with pytest.raises(ClipUnusableError):  # tried again, not served from a stored failure
        store.session().get(spec, bad)
    assert len(body.calls) == 2
    with pytest.raises(ClipUnusableError, match=r"missing\.wav: no such audio file"):
        store.get(spec, tmp_path / "missing.wav")
    # a failure that is not the clip's (a model that cannot load, a bug) is not turned into an item error
    broken = ClipAnalysis(name="broken", identity={}, compute=lambda path: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        store.get(broken, clip(tmp_path, "fine.wav", b"fine"))


@pytest.mark.unit
def test_a_damaged_result_file_is_computed_again(tmp_path: Path) -> None:
    body = Counting()
    spec = analysis(body)
    path = clip(tmp_path, "a.wav", b"clip")
    value = ClipAnalysisStore(tmp_path / "data").get(spec, path)
    stored = next((tmp_path / "data").rglob(f"{hashlib.sha256(b'clip').hexdigest()}.json"))
    stored.write_text('{"analysis": "measure-0", "clip_sha256"')  # cut short
    assert ClipAnalysisStore(tmp_path / "data").get(spec, path) == value and len(body.calls) == 2
    assert json.loads(stored.read_text())["result"] == value


@pytest.mark.unit
def test_threads_asking_for_one_clip_compute_it_once(tmp_path: Path) -> None:
    body = Counting(delay_s=0.2)
    spec, store = analysis(body), ClipAnalysisStore(tmp_path / "data")
    path = clip(tmp_path, "a.wav", b"clip")
    sessions = [store.session() for _ in range(8)]
    results: list[dict[str, float]] = []
    threads = [threading.Thread(target=lambda s=s: results.append(s.get(spec, path))) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(body.calls) == 1 and len(results) == 8 and all(r == results[0] for r in results)
    assert sum(s.counts()[spec.folder]["computed"] for s in sessions) == 1


PROCESS_CODE = """
import sys, time
from pathlib import Path
from resources.audio.clip_analysis import ClipAnalysis, ClipAnalysisStore

log = Path(sys.argv[2])
def compute(path):
    with open(log, "a") as handle:
        handle.write(path + "\\n")
    time.sleep(0.3)
    return len(Path(path).read_bytes())

spec = ClipAnalysis(name="slow", identity={}, compute=compute)
store = ClipAnalysisStore(sys.argv[1])
Path(sys.argv[2] + f".ready{sys.argv[3]}").touch()
while not all(Path(sys.argv[2] + f".ready{n}").exists() for n in (0, 1)):
    time.sleep(0.01)
print(sum(store.get(spec, p) for p in sys.argv[4:]))
"""


@pytest.mark.cli
@pytest.mark.slow
def test_two_processes_share_the_clips_and_compute_each_once(tmp_path: Path) -> None:
    """Two processes (two workers of `eyt run --parallel 2`) asking for the same clips at the same moment: the
    file lock makes one wait for the other's result, so every clip is computed once in all."""
    paths = [str(clip(tmp_path / "clips", f"{n}.wav", b"x" * (n + 1))) for n in range(4)]
    log = tmp_path / "computed.log"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", PROCESS_CODE, str(tmp_path / "data"), str(log), str(n), *paths],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (0, 1)
    ]
    outputs = [w.communicate(timeout=60) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    assert [out.strip() for out, _ in outputs] == ["10", "10"]
    assert sorted(log.read_text().split()) == sorted(paths)  # each clip once, by one or the other


@pytest.mark.unit
def test_a_model_folder_is_identified_by_its_files_not_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"a": 1}')
    (model / "weights.bin").write_bytes(b"\0" * 64)
    (model / ".cache").mkdir()
    (model / ".cache" / "download.lock").write_text("noise")
    identity = folder_identity(model)
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("config.json", "weights.bin"):
        (copy / name).write_bytes((model / name).read_bytes())
    assert folder_identity(copy) == identity  # hidden entries are left out; the path is not part of it
    (copy / "config.json").write_text('{"a": 2}')
    assert folder_identity(copy) != identity
    (copy / "config.json").write_text('{"a": 1}')
    assert folder_identity(copy) == identity
    # a large file (weights) is identified by its size and modification time, not read whole
    monkeypatch.setattr("resources.audio.clip_analysis.SMALL_FILE_BYTES", 16)
    stat = (model / "weights.bin").stat()
    os.utime(copy / "weights.bin", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert folder_identity(copy) != folder_identity(model)
    os.utime(copy / "weights.bin", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert folder_identity(copy) == folder_identity(model)
    with pytest.raises(FileNotFoundError, match="absent"):
        folder_identity(tmp_path / "absent")
