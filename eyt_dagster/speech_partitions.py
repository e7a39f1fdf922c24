"""SpeechEQ partitions: generation by EQ-i subscale (one subscale can be regenerated alone), evaluation by target."""

from dagster import DynamicPartitionsDefinition, StaticPartitionsDefinition

from eyt_dagster.speech_eq.vocabulary import SUBSCALES

subscale_partitions = StaticPartitionsDefinition(sorted(SUBSCALES))

# SpeechEQ targets: one key per slate target whose benchmarks include speech_eq. A separate set from
# EYT-Bench's "targets", so a speech-only model leaves no missing EYT partitions (and vice versa); a model that
# runs both benchmarks is a key in both.
SPEECH_TARGETS_PARTITION = "speech_targets"
speech_target_partitions = DynamicPartitionsDefinition(name=SPEECH_TARGETS_PARTITION)
