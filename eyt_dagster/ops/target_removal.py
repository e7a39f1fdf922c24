"""`eyt remove-target`: what a target leaves behind (warehouse rows, materialised partitions) and deleting it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # dagster is imported where it is used
    from dagster import AssetKey, DagsterInstance, PartitionsDefinition


def tables_with_target(target: str) -> list[tuple[str, str, int]]:
    """(schema, table, rows of the target) for every warehouse table with a `target` column."""
    from eyt_dagster.table_registry import catalog
    from resources.storage.warehouse import connect, warehouse_path

    if not warehouse_path().exists():
        return []
    with connect(catalog=catalog()) as con:
        tables = con.execute(
            "SELECT DISTINCT table_schema, table_name FROM information_schema.columns "
            "WHERE column_name = 'target' AND table_catalog = current_database() "
            "ORDER BY ALL"
        ).fetchall()
        return [
            (
                schema,
                table,
                con.execute(f'SELECT count(*) FROM "{schema}"."{table}" WHERE target = ?', [target]).fetchall()[0][0],
            )
            for schema, table in tables
        ]


def delete_target_rows(target: str, table: str, directory: Path | None = None) -> int:
    """Delete the target's rows from one table's Parquet files: a file holding nothing else (the target's
    partitions) is removed with its `target=` folder, any other file holding its rows (a report, say) is
    rewritten without them (an atomic replace). Returns the number of rows deleted."""
    from eyt_dagster.core.env_settings import data_dir
    from resources.storage.warehouse_files import (
        data_files,
        encode_value,
        is_remote,
        scratch,
        table_dir,
        warehouse_root,
        write_file,
    )

    folder = table_dir(warehouse_root(directory or data_dir()), table)
    deleted = 0
    con = scratch(folder)
    try:
        for path in data_files(folder):
            total, mine = con.execute(
                "SELECT count(*), count(*) FILTER (WHERE target = ?) FROM read_parquet(?)", [target, str(path)]
            ).fetchall()[0]
            if not mine:
                continue
            deleted += mine
            if mine == total:
                path.unlink()
            else:
                write_file(
                    con.sql(
                        "SELECT * FROM read_parquet(?) WHERE target IS DISTINCT FROM ?", params=[str(path), target]
                    ).to_arrow_table(),
                    path,
                )
    finally:
        con.close()
    if is_remote(folder):
        return deleted  # an object store has no folders to remove
    for empty in sorted(folder.rglob(f"target={encode_value(target)}"), key=lambda p: -len(p.parts)):
        if empty.is_dir() and not any(empty.rglob("*.parquet")):
            for leftover in sorted(empty.rglob("*"), key=lambda p: -len(p.parts)):
                leftover.rmdir() if leftover.is_dir() else leftover.unlink()
            empty.rmdir()
    return deleted


def _targets_in(pdef: PartitionsDefinition, key: str, sets: list[str]) -> list[str]:
    """The target ids a partition key names in the given dynamic partition sets (alone or as one dimension)."""
    from dagster import DynamicPartitionsDefinition, MultiPartitionsDefinition

    if isinstance(pdef, DynamicPartitionsDefinition):
        return [key] if pdef.name in sets else []
    if isinstance(pdef, MultiPartitionsDefinition):
        by_dimension = pdef.get_partition_key_from_str(key).keys_by_dimension
        return [
            by_dimension[d.name]
            for d in pdef.partitions_defs
            if isinstance(d.partitions_def, DynamicPartitionsDefinition) and d.partitions_def.name in sets
        ]
    return []


def target_partitions(instance: DagsterInstance, sets: list[str], target: str) -> dict[AssetKey, list[str]]:
    """{asset key: [partition keys]} of the materialised partitions that belong to `target` in the given
    dynamic partition sets (alone or as one dimension of a multi-partition)."""
    from dagster import DynamicPartitionsDefinition, MultiPartitionsDefinition

    from eyt_dagster.definitions import defs

    found: dict[AssetKey, list[str]] = {}
    for node in defs.resolve_asset_graph().asset_nodes:
        if not isinstance(node.partitions_def, (DynamicPartitionsDefinition, MultiPartitionsDefinition)):
            continue
        keys = [
            k
            for k in instance.get_materialized_partitions(node.key)
            if target in _targets_in(node.partitions_def, k, sets)
        ]
        if keys:
            found[node.key] = keys
    return found


def mark_removed(instance: DagsterInstance, materialised: dict[AssetKey, list[str]], target: str) -> int:
    """Record, for each asset partition whose history the instance cannot wipe, a materialisation that says its rows
    were deleted (tag REMOVED_TAG), so the project's staleness reads it as missing (eyt_dagster/staleness.py): a
    target still in the slate, or added again later, is planned and computed afresh. Returns how many."""
    from dagster import AssetMaterialization

    from eyt_dagster.staleness import REMOVED_TAG

    marked = 0
    for key, partitions in materialised.items():
        for partition in partitions:
            instance.report_runless_asset_event(
                AssetMaterialization(
                    asset_key=key,
                    partition=partition,
                    description=f"rows deleted by eyt remove-target {target}",
                    tags={REMOVED_TAG: "true"},
                )
            )
            marked += 1
    return marked
