"""SpeechEQ generation is partitioned by EQ-i subscale, so one subscale can be regenerated alone."""

from dagster import StaticPartitionsDefinition

from eyt_dagster.speech.eq import SUBSCALES

subscale_partitions = StaticPartitionsDefinition(sorted(SUBSCALES))
