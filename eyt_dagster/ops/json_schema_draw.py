"""Random instances of a JSON schema, and instances that break it (seeded, stdlib only): for tests and for the
benchmark's localhost server (eyt_dagster/ops/bench_server.py).

`draw(schema, rng)` returns a JSON value the schema allows, the way a server with constrained decoding
(vLLM guided decoding, llama.cpp grammars, OpenAI structured output) may answer: any enum member, any
string length between minLength and maxLength (the bounds themselves included), any number in range,
optional properties sometimes left out. `break_instance(schema, value)` returns variants of a valid value
that each violate one keyword (an enum member replaced, a string one character too long, a required
property dropped, ...), to check that a parser rejects what the schema forbids; `is_valid` checks a value
against the same subset of JSON Schema (every broken variant is checked to be really invalid).

Why our own: hypothesis-jsonschema (the maintained generator on PyPI) fails with the current hypothesis
release ('many' object has no attribute 'more'), and the reply schemas use a small subset of JSON Schema.
A keyword outside that subset raises UnsupportedSchema rather than being ignored, so an instance is never
silently wrong.

Supported: type (one or a list), enum, const, properties, required, additionalProperties (false or a
schema), items, prefixItems, minItems, maxItems, minLength, maxLength, minimum, maximum,
exclusiveMinimum, exclusiveMaximum, anyOf, oneOf (drawn like anyOf, so its branches must not overlap),
allOf (merged), $ref into $defs / definitions. Annotations (title, description, default, examples) are
ignored.
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Callable
from typing import Any

ANNOTATIONS = {"title", "description", "default", "examples", "$defs", "definitions", "$schema", "$id", "$comment"}
SUPPORTED = ANNOTATIONS | {
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
}
# Letters, digits, spaces, JSON-escaped characters and characters outside ASCII (JSON Schema and Python
# both count code points, which the emoji checks).
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789     .,;:!?'\"\\/-_\n\téüß中文😀"
# Words for `prose`: what a model's answers are made of, for the benchmark server.
WORDS = (
    "the user wants to talk about work and feels tired after a long week at home with family friends they "
    "would like some help planning time for rest sleep exercise money study travel health and a new job "
    "she asks how to tell her manager that the project is late because the team lost two people this month "
    "he hopes the next step will be easier now that the plan is clear and the deadline moved to spring"
).split()
DEFAULT_MAX_LENGTH_SPAN = 40
DEFAULT_SPAN = 1000


class UnsupportedSchema(ValueError):
    """The schema uses a keyword this generator does not implement."""


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow $ref (local only); keywords next to a $ref are kept (they narrow the target)."""
    seen = 0
    while "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise UnsupportedSchema(f"only local $ref is supported, not {ref}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
        if seen > 50:
            raise UnsupportedSchema(f"$ref cycle at {ref}")
    return node


def _check(node: dict[str, Any]) -> None:
    unknown = set(node) - SUPPORTED
    if unknown:
        raise UnsupportedSchema(f"keywords {sorted(unknown)} are not supported by this generator")


def _type_of(node: dict[str, Any], rng: random.Random) -> str:
    kind = node.get("type")
    if isinstance(kind, list):
        return rng.choice(kind)
    if kind:
        return kind
    if "properties" in node or "required" in node:
        return "object"
    if "items" in node or "prefixItems" in node:
        return "array"
    if "minLength" in node or "maxLength" in node:
        return "string"
    if any(k in node for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
        return "number"
    return rng.choice(["string", "integer", "boolean", "null"])


def _length(rng: random.Random, low: int, high: int) -> int:
    """A length in [low, high], the bounds drawn more often than their share (they are where bugs are)."""
    roll = rng.random()
    if roll < 0.2:
        return high
    if roll < 0.3:
        return low
    return rng.randint(low, high)


StringDraw = Callable[[random.Random, int, int], str]


def characters(rng: random.Random, low: int, high: int) -> str:
    """Any characters of ALPHABET (escapes, characters outside ASCII), lengths often at the bounds: for tests."""
    return "".join(rng.choice(ALPHABET) for _ in range(_length(rng, low, high)))


def prose(rng: random.Random, low: int, high: int) -> str:
    """Common English words separated by spaces, of a length drawn evenly from [low, high]: what a model's
    answer costs a tokenizer (about one token per word), where random characters cost one or more each."""
    length = rng.randint(low, high)
    text = ""
    while len(text) < length:
        text += rng.choice(WORDS) + " "
    text = text[:length]
    return text[:-1] + "s" if text.endswith(" ") else text


def draw(
    schema: dict[str, Any], rng: random.Random, *, root: dict[str, Any] | None = None, strings: StringDraw | None = None
) -> Any:
    """One random instance of `schema` (`root` holds the $defs when `schema` is a part of it). Strings come from
    `strings(rng, low, high)` (default `characters`: any character of ALPHABET, lengths often at the bounds)."""
    strings = strings or characters
    root = schema if root is None else root
    node = _resolve(root, schema)
    _check(node)
    if "const" in node:
        return copy.deepcopy(node["const"])
    if "enum" in node:
        return copy.deepcopy(rng.choice(node["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in node:
            branch = rng.choice(node[key])
            rest = {k: v for k, v in node.items() if k != key}
            return draw({**rest, **_resolve(root, branch)}, rng, root=root, strings=strings)
    if "allOf" in node:
        merged = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            merged.update(_resolve(root, part))
        return draw(merged, rng, root=root, strings=strings)
    kind = _type_of(node, rng)
    if kind == "object":
        return _draw_object(node, rng, root, strings)
    if kind == "array":
        return _draw_array(node, rng, root, strings)
    if kind == "string":
        low = int(node.get("minLength", 0))
        high = int(node.get("maxLength", low + DEFAULT_MAX_LENGTH_SPAN))
        return strings(rng, low, high)
    if kind == "integer":
        low, high = _int_bounds(node)
        return rng.choice([low, high]) if rng.random() < 0.3 else rng.randint(low, high)
    if kind == "number":
        return _draw_number(node, rng)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    raise UnsupportedSchema(f"type {kind!r} is not supported")


def _draw_object(node: dict[str, Any], rng: random.Random, root: dict[str, Any], strings: StringDraw) -> dict[str, Any]:
    properties = node.get("properties", {})
    required = set(node.get("required", []))
    missing = required - set(properties)
    if missing:
        raise UnsupportedSchema(f"required {sorted(missing)} without a schema in properties")
    value = {
        name: draw(sub, rng, root=root, strings=strings)
        for name, sub in properties.items()
        if name in required or rng.random() < 0.5
    }
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and not properties:  # a mapping (dict[str, X])
        for i in range(rng.randint(0, 3)):
            value[f"key{i}"] = draw(extra, rng, root=root, strings=strings)
    return value


def _draw_array(node: dict[str, Any], rng: random.Random, root: dict[str, Any], strings: StringDraw) -> list[Any]:
    prefix = node.get("prefixItems", [])
    items = node.get("items", {} if not prefix else False)
    low = int(node.get("minItems", 0))
    high = int(node.get("maxItems", max(low, len(prefix)) + 3))
    if items is False:
        high = min(high, len(prefix))
    if low > high:
        raise UnsupportedSchema(f"array needs {low} items but allows at most {high}")
    size = _length(rng, low, high)
    return [draw(prefix[i] if i < len(prefix) else items, rng, root=root, strings=strings) for i in range(size)]


def _int_bounds(node: dict[str, Any]) -> tuple[int, int]:
    low = node.get("minimum", -DEFAULT_SPAN)
    high = node.get("maximum", DEFAULT_SPAN)
    if "exclusiveMinimum" in node:
        low = max(low, math.floor(node["exclusiveMinimum"]) + 1)
    if "exclusiveMaximum" in node:
        high = min(high, math.ceil(node["exclusiveMaximum"]) - 1)
    low, high = math.ceil(low), math.floor(high)
    if low > high:
        raise UnsupportedSchema(f"no integer between {low} and {high}")
    return low, high


def _draw_number(node: dict[str, Any], rng: random.Random) -> float:
    low = float(node.get("minimum", node.get("exclusiveMinimum", -DEFAULT_SPAN)))
    high = float(node.get("maximum", node.get("exclusiveMaximum", DEFAULT_SPAN)))
    candidates = [v for v, key in ((low, "minimum"), (high, "maximum")) if key in node]
    if candidates and rng.random() < 0.3:
        return rng.choice(candidates)
    value = rng.uniform(low, high)
    if value in (node.get("exclusiveMinimum"), node.get("exclusiveMaximum")):
        value = (low + high) / 2
    return value


# -- instances that break a schema --------------------------------------------------------------------------

NOT_ALLOWED = "__not_allowed__"


def _off_value(allowed: list[Any]) -> Any:
    """A value of the same JSON kind as `allowed` that is none of them."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in allowed):
        return next(v for v in (0.41, 7.77, -3.3) if v not in allowed)
    if all(isinstance(v, bool) for v in allowed):
        return None
    return NOT_ALLOWED


def is_valid(schema: dict[str, Any], value: Any, *, root: dict[str, Any] | None = None) -> bool:
    """Whether `value` satisfies `schema` (the keyword subset above; JSON equality, so true is not 1)."""
    root = schema if root is None else root
    node = _resolve(root, schema)
    _check(node)
    ok = True
    if "const" in node:
        ok &= _json_equal(value, node["const"])
    if "enum" in node:
        ok &= any(_json_equal(value, option) for option in node["enum"])
    if "anyOf" in node:
        ok &= any(is_valid(branch, value, root=root) for branch in node["anyOf"])
    if "oneOf" in node:
        ok &= sum(is_valid(branch, value, root=root) for branch in node["oneOf"]) == 1
    for part in node.get("allOf", []):
        ok &= is_valid(part, value, root=root)
    kinds = node.get("type")
    if kinds is not None:
        ok &= any(_is_kind(value, kind) for kind in (kinds if isinstance(kinds, list) else [kinds]))
    if isinstance(value, str):
        ok &= node.get("minLength", 0) <= len(value) <= node.get("maxLength", math.inf)
    if _is_kind(value, "number"):
        ok &= node.get("minimum", -math.inf) <= value <= node.get("maximum", math.inf)
        ok &= node.get("exclusiveMinimum", -math.inf) < value < node.get("exclusiveMaximum", math.inf)
    if isinstance(value, dict):
        properties = node.get("properties", {})
        ok &= all(name in value for name in node.get("required", []))
        extra = node.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                ok &= is_valid(properties[name], item, root=root)
            elif extra is False:
                ok = False
            elif isinstance(extra, dict):
                ok &= is_valid(extra, item, root=root)
    if isinstance(value, list):
        ok &= node.get("minItems", 0) <= len(value) <= node.get("maxItems", math.inf)
        prefix = node.get("prefixItems", [])
        items = node.get("items", True)
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else items
            ok &= sub is not False and (sub is True or is_valid(sub, item, root=root))
    return bool(ok)


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "integer":
        return _is_kind(value, "number") and float(value).is_integer()
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    expected = {"string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)}[kind]
    return isinstance(value, expected)


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if _is_kind(a, "number") and _is_kind(b, "number"):
        return a == b
    return type(a) is type(b) and a == b


def break_instance(schema: dict[str, Any], value: Any) -> list[tuple[str, Any]]:
    """(what was broken, a copy of `value` that violates `schema` there) for every keyword that can be
    broken at one place of `value`: enum/const, minLength/maxLength, minimum/maximum, required,
    minItems/maxItems, and the type of a boolean. In an anyOf/oneOf, the branches `value` satisfies are
    broken; only variants that `is_valid` rejects are returned (a change another branch allows is not)."""
    out: list[tuple[str, Any]] = []
    _break(schema, schema, value, value, [], out)
    return [(what, bad) for what, bad in out if not is_valid(schema, bad)]


def _with(value: Any, path: list[Any], new: Any) -> Any:
    result = copy.deepcopy(value)
    if not path:
        return new
    target = result
    for key in path[:-1]:
        target = target[key]
    if new is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = new
    return result


_DELETE = object()


def _break(
    root: dict[str, Any], schema: dict[str, Any], whole: Any, value: Any, path: list[Any], out: list[tuple[str, Any]]
) -> None:
    """Break `value` (the part of `whole` at `path`) against `schema`, appending to `out`."""
    node = _resolve(root, schema)
    where = "/".join(str(p) for p in path) or "(root)"
    for key in ("anyOf", "oneOf"):
        if key in node:
            rest = {k: v for k, v in node.items() if k != key}
            for branch in node[key]:
                merged = {**rest, **_resolve(root, branch)}
                if is_valid(merged, value, root=root):
                    _break(root, merged, whole, value, path, out)
            return
    if "allOf" in node:
        for part in node["allOf"]:
            _break(root, part, whole, value, path, out)
    if "const" in node:
        out.append((f"{where}: not the const", _with(whole, path, _off_value([node["const"]]))))
    if "enum" in node:
        out.append((f"{where}: not in the enum", _with(whole, path, _off_value(node["enum"]))))
    if node.get("type") == "boolean":
        out.append((f"{where}: not a boolean", _with(whole, path, "maybe")))
    if isinstance(value, str):
        if "maxLength" in node:
            out.append((f"{where}: longer than maxLength", _with(whole, path, "x" * (node["maxLength"] + 1))))
        if node.get("minLength", 0) > 0:
            out.append((f"{where}: shorter than minLength", _with(whole, path, "")))
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "enum" not in node:
        if "minimum" in node:
            out.append((f"{where}: below minimum", _with(whole, path, node["minimum"] - 1)))
        if "maximum" in node:
            out.append((f"{where}: above maximum", _with(whole, path, node["maximum"] + 1)))
    if isinstance(value, dict):
        properties = node.get("properties", {})
        for name in node.get("required", []):
            if name in value:
                out.append((f"{where}: required '{name}' missing", _with(whole, [*path, name], _DELETE)))
        for name, sub in properties.items():
            if name in value:
                _break(root, sub, whole, value[name], [*path, name], out)
    if isinstance(value, list):
        if node.get("minItems", 0) > 0:
            out.append((f"{where}: fewer than minItems", _with(whole, path, value[: node["minItems"] - 1])))
        if "maxItems" in node and value:
            longer = value + [value[-1]] * (node["maxItems"] + 1 - len(value))
            out.append((f"{where}: more than maxItems", _with(whole, path, longer)))
        prefix = node.get("prefixItems", [])
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else node.get("items")
            if isinstance(sub, dict):
                _break(root, sub, whole, item, [*path, i], out)


def longest(schema: dict[str, Any], *, root: dict[str, Any] | None = None) -> int:
    """The length in characters of the longest compact JSON text the schema allows (strings counted as
    their characters plus quotes, numbers as 24), or raises UnsupportedSchema when it is unbounded."""
    root = schema if root is None else root
    node = _resolve(root, schema)
    if "const" in node:
        return len(json.dumps(node["const"], ensure_ascii=False))
    if "enum" in node:
        return max(len(json.dumps(v, ensure_ascii=False)) for v in node["enum"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            rest = {k: v for k, v in node.items() if k != key}
            return max(longest({**rest, **_resolve(root, b)}, root=root) for b in node[key])
    kind = node.get("type")
    if kind == "string":
        if "maxLength" not in node:
            raise UnsupportedSchema("a string without maxLength has no longest value")
        return node["maxLength"] + 2
    if kind in ("integer", "number"):
        return 24
    if kind in ("boolean", "null"):
        return 5
    if kind == "object":
        parts = [
            len(json.dumps(name)) + 1 + longest(sub, root=root) for name, sub in node.get("properties", {}).items()
        ]
        return 2 + sum(parts) + max(len(parts) - 1, 0)
    if kind == "array":
        prefix = node.get("prefixItems", [])
        if "maxItems" not in node:
            raise UnsupportedSchema("an array without maxItems has no longest value")
        sizes = [longest(prefix[i] if i < len(prefix) else node["items"], root=root) for i in range(node["maxItems"])]
        return 2 + sum(sizes) + max(len(sizes) - 1, 0)
    raise UnsupportedSchema(f"no longest value for {node}")
