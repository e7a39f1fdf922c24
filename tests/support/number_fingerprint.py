"""The numbers of a warehouse, as plain values, for checking that a change meant to save time changed none of them.

`fingerprint(con)` reads every table of the warehouse's schemas, keeps the columns that a run computes (not its
clocks, run ids, paths or durations, which differ between two runs of the same code), sorts the rows, and returns
them as JSON-ready lists. `differences(expected, found)` names each table, column and row that differs.

Floats are compared within FLOAT_TOLERANCE rather than bit for bit: the sentence encoder's kernels (ONNX Runtime)
sum in an order that depends on the CPU's instruction set, so the last bits of a cosine can differ between machines
while every decision taken from it stays the same; on one machine the numbers are bit-identical run after run.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

FLOAT_TOLERANCE = 1e-6  # absolute, on values of order 1 (cosines, shares, 0-100 scores)

# columns whose values are the run's circumstances, not its results
VOLATILE = re.compile(
    r"(^|_)(created|updated|started|finished|ended|recorded|computed|written|materialized)(_at)?$"
    r"|_at$|run_id|(^|_)(latency|seconds|duration|elapsed|wall|timestamp|time_s|ms)($|_)|path$|(^|_)file$|^dagster_|_id_run$"
)


def _value(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if isinstance(v, (int, str, bool)):
        return v
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _value(x) for k, x in sorted(v.items())}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return str(v)


def fingerprint(con: Any, schemas: tuple[str, ...] = ("dialogue", "speech", "voice")) -> dict[str, Any]:
    """table -> {"columns": [...], "rows": [[...], ...]} for every base table and view of `schemas`."""
    tables = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema IN ?"
        " ORDER BY table_schema, table_name",
        [list(schemas)],
    ).fetchall()
    out: dict[str, Any] = {}
    for schema, name in tables:
        columns = [
            c
            for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?"
                " ORDER BY ordinal_position",
                [schema, name],
            ).fetchall()
            if not VOLATILE.search(c)
        ]
        if not columns:
            continue
        quoted = ", ".join(f'"{c}"' for c in columns)
        rows = [[_value(v) for v in row] for row in con.execute(f'SELECT {quoted} FROM "{schema}"."{name}"').fetchall()]
        rows.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
        out[f"{schema}.{name}"] = {"columns": columns, "rows": rows}
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            return abs(float(a) - float(b)) <= FLOAT_TOLERANCE * max(1.0, abs(float(b)))
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def differences(expected: dict[str, Any], found: dict[str, Any], limit: int = 20) -> list[str]:
    """What differs, one line each (at most `limit`): tables missing or added, columns changed, row counts, values."""
    lines: list[str] = []
    for table in sorted(expected.keys() | found.keys()):
        if table not in found:
            lines.append(f"{table}: missing from the warehouse")
            continue
        if table not in expected:
            lines.append(f"{table}: new table, not in the fingerprint")
            continue
        e, f = expected[table], found[table]
        if e["columns"] != f["columns"]:
            lines.append(f"{table}: columns {e['columns']} became {f['columns']}")
            continue
        if len(e["rows"]) != len(f["rows"]):
            lines.append(f"{table}: {len(e['rows'])} rows became {len(f['rows'])}")
            continue
        for i, (er, fr) in enumerate(zip(e["rows"], f["rows"])):
            for column, a, b in zip(e["columns"], er, fr):
                if not _same(b, a):
                    lines.append(f"{table}, sorted row {i}, column {column}: {a!r} became {b!r}")
                    break
            if len(lines) >= limit:
                return lines
    return lines


def write(path: Path, prints: dict[str, Any]) -> None:
    path.write_text(json.dumps(prints, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")


def read(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.read_text())
    return result
