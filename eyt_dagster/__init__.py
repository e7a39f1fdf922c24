"""EYT-Bench and SpeechEQ as one Dagster asset graph stored in DuckDB.

The pure logic (taxonomies, records, the dialogue loop, metrics) lives here and knows nothing of Dagster;
`eyt_dagster.definitions` is the code location that wires it to the assets in `assets/` and the
resources in `resources/`.
"""

import warnings

# Dagster APIs this project relies on that Dagster 1.13 still labels beta or preview. Their behaviour is
# pinned by the tests (tests/test_pipeline.py; observable source assets: tests/test_settings_staleness.py), so the
# label is not repeated on every import.
ACCEPTED_BETA_APIS = (
    "PandasColumn",
    "create_dagster_pandas_dataframe_type",
    "MultiToSingleDimensionPartitionMapping",
    "asset_check",
    "data_version",
    "observable_source_asset",
)
warnings.filterwarnings("ignore", message=rf".*`({'|'.join(ACCEPTED_BETA_APIS)})`.* is currently in (beta|preview).*")
