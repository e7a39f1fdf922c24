"""EYT-Bench and SpeechEQ as one Dagster asset graph stored in DuckDB.

The pure logic (taxonomies, records, the dialogue loop, metrics) lives here and knows nothing of Dagster;
`eyt_dagster.definitions` is the code location that wires it to the assets in `assets/` and the
resources in `resources/`.
"""
