"""`eyt remove-target`: what a target leaves behind (warehouse rows, materialised partitions) and deleting it."""

from __future__ import annotations


def tables_with_target(target: str) -> list[tuple[str, str, int]]:
    """(schema, table, rows of the target) for every warehouse table with a `target` column."""
    from resources.warehouse import connect, warehouse_path

    if not warehouse_path().exists():
        return []
    with connect() as con:
        tables = con.execute("SELECT DISTINCT table_schema, table_name FROM information_schema.columns "
                             "WHERE column_name = 'target' AND table_catalog = current_database() "
                             "ORDER BY ALL").fetchall()
        return [(schema, table, con.execute(f'SELECT count(*) FROM "{schema}"."{table}" WHERE target = ?',
                                            [target]).fetchone()[0]) for schema, table in tables]


def _targets_in(pdef, key: str, sets: list[str]) -> list[str]:  # noqa: ANN001 - a PartitionsDefinition
    """The target ids a partition key names in the given dynamic partition sets (alone or as one dimension)."""
    from dagster import DynamicPartitionsDefinition, MultiPartitionsDefinition

    if isinstance(pdef, DynamicPartitionsDefinition):
        return [key] if pdef.name in sets else []
    if isinstance(pdef, MultiPartitionsDefinition):
        by_dimension = pdef.get_partition_key_from_str(key).keys_by_dimension
        return [by_dimension[d.name] for d in pdef.partitions_defs
                if isinstance(d.partitions_def, DynamicPartitionsDefinition) and d.partitions_def.name in sets]
    return []


def target_partitions(instance, sets: list[str], target: str) -> dict:  # noqa: ANN001
    """{asset key: [partition keys]} of the materialised partitions that belong to `target` in the given
    dynamic partition sets (alone or as one dimension of a multi-partition)."""
    from dagster import DynamicPartitionsDefinition, MultiPartitionsDefinition

    from eyt_dagster.definitions import defs

    found = {}
    for node in defs.resolve_asset_graph().asset_nodes:
        if not isinstance(node.partitions_def, (DynamicPartitionsDefinition, MultiPartitionsDefinition)):
            continue
        keys = [k for k in instance.get_materialized_partitions(node.key)
                if target in _targets_in(node.partitions_def, k, sets)]
        if keys:
            found[node.key] = keys
    return found
