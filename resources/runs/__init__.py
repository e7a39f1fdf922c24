"""Runs on this host: which process runs what (from /proc, and the tags a run carries), and the heartbeat files
of running steps that `eyt run` and the explorer read."""

__all__ = ["processes", "progress_files"]
