"""Shared by both benchmarks: the slate, record types and role protocols, prompts, statistics, table types."""
