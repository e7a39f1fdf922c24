"""The target partitions of both benchmarks, for the code that registers and removes slate targets (each
benchmark's partitions are defined with its assets: assets/eyt_bench/partitions.py, assets/speech_eq/partitions.py)."""

from __future__ import annotations

from typing import Literal

from assets.eyt_bench.partitions import TARGETS_PARTITION
from assets.eyt_voice.partitions import VOICE_TARGETS_PARTITION
from assets.speech_eq.partitions import SPEECH_TARGETS_PARTITION

# benchmark -> the dynamic partitions set of its targets
TARGET_PARTITION_SETS: dict[Literal["eyt_bench", "speech_eq", "eyt_voice"], str] = {
    "eyt_bench": TARGETS_PARTITION,
    "speech_eq": SPEECH_TARGETS_PARTITION,
    "eyt_voice": VOICE_TARGETS_PARTITION,
}
