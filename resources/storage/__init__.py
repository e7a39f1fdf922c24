"""Storage: the warehouse (Parquet files per table, the DuckDB views, the IO manager and its reads), the SQLite and
Postgres connections every cache opens, the reports' result cache, and paths stored relative to the data
directory. Imports no other group."""

__all__ = [
    "annotation_labels",
    "data_paths",
    "postgres_db",
    "report_cache",
    "report_reads",
    "sqlite_files",
    "warehouse",
    "warehouse_catalog",
    "warehouse_files",
    "warehouse_views",
]
