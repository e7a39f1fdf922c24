"""Helpers shared by the tests (imported as `support.<module>`; tests/ is on pytest's pythonpath)."""
