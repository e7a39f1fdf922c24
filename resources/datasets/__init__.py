"""Data the benchmarks read from outside: persona corpora (shipped fixture, a local copy or the hub), SpeechEQ
data in the released layout, and the encoder-calibration pairs."""

__all__ = ["calibration_pairs", "persona_sources", "speech_release"]
