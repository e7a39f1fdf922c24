"""The role factories, one per benchmark: the one place that decides whether a slate's model is an embedded
baseline or a model behind an endpoint, and builds it into the role the benchmark's protocol asks for. They sit
here, not in the benchmark packages, because they build resources (chat clients, TTS, ASR) and the benchmarks are
pure; the assets ask them for roles."""

__all__ = ["eyt_roles", "speech_roles", "voice_roles"]
