"""Spoken EYT-Bench (`eyt_voice`): EYT-Bench's dialogues heard instead of read (docs/spoken-eyt.md).

Built on the other two benchmarks: EYT-Bench's ChatSEEDs, simulator, perception, replies, judge and metrics, and
SpeechEQ's prosody lexicon and voices. It imports both; neither imports it. Pure logic, no Dagster."""
