"""Digests of every table in a warehouse, for checking that a change of code left the rows alone.

    python bench/warehouse_digest.py data/eyt.duckdb --json before.json
    python bench/warehouse_digest.py other/eyt.duckdb --compare before.json

Each table gets one digest per column: the sha256 of the column's values, sorted (so the order rows were written
in does not count). Columns that measure the run rather than the benchmark are left out by name: wall-clock
latencies, timestamps, run ids and file paths under a data directory (see VOLATILE). `--compare` prints each
table and column whose digest differs and exits 1 when any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys

import duckdb

# What differs between two runs of the same code on the same slate: time taken, when, and which run.
VOLATILE = re.compile(r"(latency|_at$|^run_id$|duration_ms|tokens_per_s|elapsed|wall_s|started|finished)")
# Columns that hold such a value indirectly: they differ between two checkouts of the same code, and are reported
# apart from the differences that count.
EXPECTED = {
    "dialogue.human_annotations.source_file": "the annotation file's absolute path, so the checkout's location",
    "reports.paper_tables.sha256": "digests of the exported files, whose cost columns hold mean latencies",
}


def digests(database: str) -> dict[str, dict[str, str]]:
    con = duckdb.connect(database, read_only=True)
    tables = con.sql(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_schema NOT IN ('information_schema', 'pg_catalog') ORDER BY 1, 2"
    ).fetchall()
    out: dict[str, dict[str, str]] = {}
    for schema, table in tables:
        name = f"{schema}.{table}"
        columns = [
            c
            for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                "ORDER BY ordinal_position",
                [schema, table],
            ).fetchall()
        ]
        found = {"rows": str(con.execute(f'SELECT count(*) FROM "{schema}"."{table}"').fetchall()[0][0])}
        for column in columns:
            if VOLATILE.search(column):
                continue
            values = con.sql(f'SELECT CAST("{column}" AS VARCHAR) AS v FROM "{schema}"."{table}" ORDER BY v').fetchall()
            found[column] = hashlib.sha256("\x1f".join(str(v) for (v,) in values).encode()).hexdigest()[:16]
        out[name] = found
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("database")
    parser.add_argument("--json", help="write the digests to this file")
    parser.add_argument("--compare", help="a file written by --json to compare with")
    args = parser.parse_args()
    found = digests(args.database)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f, indent=1, sort_keys=True)
    print(f"{len(found)} tables, {sum(len(c) - 1 for c in found.values())} columns digested")
    if not args.compare:
        return 0
    with open(args.compare) as f:
        before = json.load(f)
    differ = []
    for table in sorted(set(before) | set(found)):
        a, b = before.get(table), found.get(table)
        if a is None or b is None:
            differ.append(f"{table}: only in {'the new' if a is None else 'the old'} warehouse")
            continue
        differ += [f"{table}.{c}" for c in sorted(set(a) | set(b)) if a.get(c) != b.get(c)]
    expected = [d for d in differ if d in EXPECTED]
    differ = [d for d in differ if d not in EXPECTED]
    for name in expected:
        print(f"differs as expected: {name} ({EXPECTED[name]})")
    print("\n".join(differ) if differ else "every other table and column digest agrees")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
