"""Runs on this host: which process runs what (from /proc, and the tags a run carries), the heartbeat files
of running steps that `eyt run` and the explorer read, and how long past runs of a step took per item."""

__all__ = ["processes", "progress_files", "step_history"]
