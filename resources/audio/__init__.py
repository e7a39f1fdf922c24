"""Audio: speech synthesis (embedded espeak-ng and OpenAI-compatible servers), speech recognition, per-clip
acoustic features and analyses, speech-emotion models and their cues, the spoken EYT-Bench's user clips, and
librosa's numba cache."""

__all__ = [
    "asr",
    "audio_features",
    "audio_parts",
    "clip_analysis",
    "cue_source",
    "tts",
    "voice_clips",
    "voice_measures",
]
