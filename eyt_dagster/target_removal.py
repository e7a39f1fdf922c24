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


def target_partitions(instance, sets: list[str], target: str) -> dict:  # noqa: ANN001
    """{asset key: [partition keys]} of the materialised partitions that belong to `target` in the given
    dynamic partition sets (alone or as one dimension of a multi-partition)."""
    from dagster import DynamicPartitionsDefinition, MultiPartitionsDefinition

    from eyt_dagster.definitions import defs

    found = {}
    for node in defs.resolve_asset_graph().asset_nodes:
        pdef = node.partitions_def
        if isinstance(pdef, DynamicPartitionsDefinition) and pdef.name in sets:
            keys = [target]
        elif isinstance(pdef, MultiPartitionsDefinition):
            dims = [d.name for d in pdef.partitions_defs
                    if isinstance(d.partitions_def, DynamicPartitionsDefinition) and d.partitions_def.name in sets]
            keys = [k for k in instance.get_materialized_partitions(node.key)
                    if any(pdef.get_partition_key_from_str(k).keys_by_dimension[d] == target for d in dims)]
        else:
            continue
        keys = [k for k in keys if k in instance.get_materialized_partitions(node.key)]
        if keys:
            found[node.key] = keys
    return found
