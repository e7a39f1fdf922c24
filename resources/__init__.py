"""Dagster resources and the code that talks to the outside world: models, the call cache, the warehouse, audio, personas."""
