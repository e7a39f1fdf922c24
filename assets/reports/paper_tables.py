"""paper_tables: every table the two papers report that has rows, exported as LaTeX, Markdown and CSV files under
<data dir>/exports/<format>/ (docs/reports.md); the stored table lists the files and their hashes."""

import hashlib

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, MetadataValue, Output, asset

from assets._output import table_output
from eyt_dagster.reporting import paper_tables as pt
from eyt_dagster.reporting import table_formats as tf
from resources.models.model_access import ReportAccess, SlateAccess
from resources.storage.report_reads import code_version, read_tables

LOGIC_VERSION = "3"  # 2: a table with no rows is not written; 3: the footnote on judge-corrected figures
EXPORT_DIR = "exports"
_DEPS = [name for name in pt.SOURCE_TABLES if name != "reports.model_cards"]


@asset(
    key_prefix=["reports"],
    group_name="reports",
    code_version=LOGIC_VERSION,
    ins={"model_cards": AssetIn(key=["reports", "model_cards"])},
    deps=[name.split(".") for name in (*_DEPS, pt.CORRECTED_SOURCE)],
)
def paper_tables(
    context: AssetExecutionContext, slate: SlateAccess, reports: ReportAccess, model_cards: pd.DataFrame
) -> Output[pd.DataFrame]:
    """The papers' tables from the warehouse, one file per table with rows and format; the same warehouse gives
    byte-identical files (sorted rows, fixed decimals, no timestamps). A table with no rows is not written: the
    metadata `not_written` says why each has none."""
    sources = {**read_tables(reports.warehouse, [*_DEPS, pt.CORRECTED_SOURCE]), "reports.model_cards": model_cards}
    tables = pt.build_tables(sources)
    footnote = pt.provenance(
        sources, slate=slate.slate.name, seed=slate.slate.seed, code_version=code_version(pt.TABLES_VERSION)
    )
    root = reports.warehouse.parent / EXPORT_DIR
    rows: list[dict[str, str]] = []
    empty = pt.empty_tables(tables, sources)
    for name, why in empty.items():
        context.log.info(f"{name}: not written, no rows: {why}")
    for fmt in tf.FORMATS:
        for path in tf.export_tables(tables, sources, root / fmt, fmt, footnote).written:
            rows.append(
                {
                    "format": fmt,
                    "file": str(path.relative_to(reports.warehouse.parent)),
                    "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                }
            )
    index = (
        pd.DataFrame(rows, columns=["format", "file", "sha256"]).sort_values(["format", "file"]).reset_index(drop=True)
    )
    main = next(t for t in tables if t.name == "eyt_objective")
    seq = next(t for t in tables if t.name == "seq_main")
    return table_output(
        index,
        folder=str(root),
        eyt_objective=MetadataValue.md(tf.to_markdown(main, footnote)),
        seq_main=MetadataValue.md(tf.to_markdown(seq, footnote)),
        not_written=MetadataValue.json(empty),
    )
