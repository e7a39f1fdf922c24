"""The pages of a static export, named: an explorer URL (as the URL helpers of app.py write it) to the page it
shows, as a key that is the same for every spelling of that page (`/dialogues?target=A&pool=P` and
`...&sort=n_dialogues&page=1` are one page, and side by side does not depend on the order of its targets), the
key back to the URL the server answers, and the key to a file name in the export that is safe for any id (a
readable part of the id, then a hash of it: ids may hold '/', ':', spaces, unicode, or differ only in case)."""

from __future__ import annotations

import hashlib
import posixpath
import re
import unicodedata
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from eyt_dagster.explorer import app, pairs, queries, speech
from eyt_dagster.explorer.judges import LARGEST
from eyt_dagster.speech_eq.conditions import DEFAULT_CONDITION
from eyt_dagster.speech_eq.vocabulary import SUBSCALES

# A page key: its kind, then the values that tell it from other pages of the kind (text, a page number, a tuple
# of targets).
Key = tuple[Any, ...]
INDEX: Key = ("index",)
STYLESHEET: Key = ("stylesheet",)
STYLESHEET_FILE = "explorer.css"
SEQUENTIAL: Key = ("sequential",)  # the sequential design's page: one, whatever the selection
COSTS: Key = ("costs",)  # estimated against actual cost: one, whatever the selection
DEFAULT_METRIC = "empathy"  # the paired-difference page's metric when none is named
SEQ: Key = ("seq", DEFAULT_CONDITION)  # the SEQ leaderboard as the navigation opens it
SEQ_SUBSCALE = "/seq/subscale/"
VOICE: Key = ("voice", "", "")  # the spoken EYT-Bench's report, as the navigation opens it (no cell chosen)
VOICE_DIALOGUE = "/voice/dialogue/"


def page_key(href: str) -> tuple[Key | None, str]:
    """(the key of the page an explorer link opens, its #fragment); None for anything that is not one of the
    explorer's own pages (another site, `javascript:`, a malformed parameter, a route the explorer has not)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return None, ""
    query = _params(parts.query)
    raw = parts.path
    try:
        return _key(raw, query), parts.fragment
    except (ValueError, KeyError, IndexError):
        return None, ""


def _params(query: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        out.setdefault(k, []).append(v)
    return out


def _one(query: dict[str, list[str]], name: str, default: str = "") -> str:
    return query.get(name, [default])[-1]


def _page(query: dict[str, list[str]]) -> int:
    number = int(_one(query, "page", "1"))
    if number < 1:
        raise ValueError(number)
    return number


# Each list page's parameters (page aside), in its key's order, with their defaults. A link with any other
# parameter is a variant the export never holds.
PARAMETERS: dict[str, dict[str, str]] = {
    "/": {"target": "", "pool": "", "explain": ""},  # a cell (pool) and a number opened: the target's page
    "/dialogues": {"target": "", "pool": "", "sort": "seed_id", "order": "", "failure": ""},
    "/judges": {"target": "", "pool": "", "sort": LARGEST},
    "/pairs": {"pool": "", "a": "", "b": "", "metric": DEFAULT_METRIC},
    "/speech": {k: "" for k in ("composite", "subscale", "valence", "target", "condition", "outcome")},
    "/speech/build": {"subscale": "", "kind": ""},
}
KINDS = {
    "/": "index",
    "/dialogues": "dialogues",
    "/judges": "judges",
    "/pairs": "pairs",
    "/speech": "speech",
    "/speech/build": "speech_build",
}


def _key(raw: str, q: dict[str, list[str]]) -> Key | None:
    path = unquote(raw)
    if path == "/explorer.css":
        return STYLESHEET
    if path == "/sequential":
        return SEQUENTIAL if not q else ("variant", path)
    if path == "/costs":
        return COSTS if not q else ("variant", path)
    if path == "/seq" or path.startswith(SEQ_SUBSCALE):  # one page per condition (none named: the default one)
        if set(q) - {"condition"}:
            return ("variant", path)
        condition = _one(q, "condition") or DEFAULT_CONDITION
        if path == "/seq":
            return ("seq", condition)
        slug = path[len(SEQ_SUBSCALE) :]
        return ("seq_subscale", slug, condition) if slug in SUBSCALES else None
    if path == "/voice":  # the report, or the report with one cell's dialogues (a target and a pool)
        if set(q) - {"target", "pool"} or len({k for k in q if _one(q, k)}) == 1:
            return ("variant", path)
        return ("voice", _one(q, "target"), _one(q, "pool"))
    if path == "/compare":
        if set(q) - {"seed", "target"}:
            return ("variant", path)
        return ("compare", _one(q, "seed"), tuple(sorted(dict.fromkeys(q.get("target", [])))))
    if path in PARAMETERS:
        known = PARAMETERS[path]
        if set(q) - set(known) - {"page"}:
            return ("variant", path)
        values = {k: _one(q, k, default) or default for k, default in known.items()}
        if (
            path == "/dialogues"
        ):  # as the route reads them: a leaderboard metric sorts by its column, order is desc or not
            sort = values["sort"]
            values["sort"] = queries.HEADLINE.get(sort, sort) if sort not in queries.SORT_KEYS else sort
            values["order"] = "desc" if values["order"] == "desc" else ""
        if path == "/pairs":
            values["metric"] = pairs.metric_column(values["metric"])
        if path == "/":
            return (KINDS[path], values["target"]) if values["target"] else INDEX
        return (KINDS[path], *values.values(), _page(q))
    segments = raw.split("/")
    if raw.startswith("/dialogue/") and len(segments) == 4 and set(q) <= {"explain"}:  # parts quoted with safe=''
        # one page whichever number it opens (the export's page opens none)
        return ("dialogue", unquote(segments[2]), unquote(segments[3]))
    if raw.startswith(VOICE_DIALOGUE) and len(segments) == 5 and set(q) <= {"explain"}:  # as /dialogue/ above
        return ("voice_dialogue", unquote(segments[3]), unquote(segments[4]))
    if path == "/corrected" and set(q) <= {"target", "pool", "explain"}:  # one page whichever number it opens
        return ("corrected", _one(q, "target"), _one(q, "pool"))
    if raw.startswith("/call/") and len(segments) == 3 and set(q) <= {"prompt"}:
        prompt = _one(q, "prompt")
        return ("call", unquote(segments[2]), prompt) if prompt else ("call", unquote(segments[2]))
    if raw.startswith("/speech/item/") and set(q) <= {"condition"}:  # the export's page shows every condition's
        return ("speech_item", unquote(raw[len("/speech/item/") :]))
    if raw.startswith("/clip/") and not q:
        return ("clip", unquote(raw[len("/clip/") :]))
    return None


def page_url(key: Key, order: list[str]) -> str:
    """The URL the explorer serves the page of `key` at; side by side lists its targets in `order` (the
    selection's), so its columns do not depend on which link was followed first."""
    kind = key[0]
    if kind == "index":
        return "/" if len(key) == 1 else f"/?{urlencode({'target': key[1]})}"
    if kind == "dialogues":
        _, target, pool, sort, order, failure, number = key
        return app.dialogues_url(target=target, pool=pool, sort=sort, order=order, failure=failure, page=number)
    if kind == "judges":
        _, target, pool, sort, number = key
        return app.judges_url(target=target, pool=pool, sort=sort, page=number)
    if kind == "pairs":
        _, pool, a, b, metric, number = key
        return app.pairs_url(pool=pool, a=a, b=b, metric=metric, page=number)
    if kind == "compare":
        rank = {t: i for i, t in enumerate(order)}
        return app.compare_url(key[1], sorted(key[2], key=lambda t: (rank.get(t, len(rank)), t)))
    if kind == "speech":
        return app.speech_url(**dict(zip(PARAMETERS["/speech"], key[1:-1], strict=True)), page=key[-1])
    if kind == "dialogue":
        return app.dialogue_url(key[1], key[2])
    if kind == "seq":
        return app.seq_url(condition="" if key[1] == DEFAULT_CONDITION else key[1])
    if kind == "seq_subscale":
        return app.seq_subscale_url(key[1], condition="" if key[2] == DEFAULT_CONDITION else key[2])
    if kind == "voice":
        return app.voice_url(target=key[1], pool=key[2])
    if kind == "voice_dialogue":
        return app.voice_dialogue_url(key[1], key[2])
    if kind == "call":
        return app.call_url(key[1], key[2] if len(key) > 2 else None)
    if kind == "corrected":
        return app.corrected_url(key[1], key[2])
    if kind == "speech_item":
        return app.speech_item_url(key[1])
    if kind == "sequential":
        return app.sequential_url()
    if kind == "costs":
        return app.costs_url()
    if kind == "clip":
        return speech.clip_url(key[1])
    raise ValueError(f"no URL for {key!r}")


def slug(text: str, limit: int = 40) -> str:
    """A readable, lower-case, ASCII-only part of a file name ([a-z0-9-]); never empty."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return cleaned[:limit].strip("-") or "x"


def digest(*parts: str) -> str:
    """10 hex digits of the sha256 of the exact values: tells apart ids the slug makes alike."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:10]


def file_name(key: Key, suffix: str = ".html") -> str:
    """The export's path of a page (or, for a clip, of its file with `suffix`), relative to the export's root;
    every character in [a-z0-9._/-]."""
    kind = key[0]
    if kind == "index" and len(key) == 1:
        return "index.html"
    if kind == "stylesheet":
        return STYLESHEET_FILE
    if kind == "sequential":
        return "sequential.html"
    if kind == "costs":
        return "costs.html"
    if kind == "dialogues":
        _, target, pool, sort, order, failure, number = key
        tag = digest(target, pool, sort, order, failure)
        return f"cells/{slug(target)}-on-{slug(pool)}-{tag}-p{number}.html"
    if kind == "judges":
        _, target, pool, sort, number = key
        return f"judges/{slug(target)}-on-{slug(pool)}-{digest(target, pool, sort)}-p{number}.html"
    if kind == "pairs":
        _, pool, a, b, metric, number = key
        return f"pairs/{slug(a, 30)}-vs-{slug(b, 30)}-on-{slug(pool, 30)}-{slug(metric)}-{digest(pool, a, b, metric)}-p{number}.html"
    if kind == "compare":
        return f"compare/{slug(key[1])}-{digest(key[1], *key[2])}.html"
    if kind == "speech":
        target = key[4]
        return f"speech/items-{slug(target, 30) + '-' if target else ''}{digest(*key[1:-1])}-p{key[-1]}.html"
    if kind == "seq":
        return f"seq/leaderboard-{slug(key[1], 30)}-{digest(*key)}.html"
    if kind == "seq_subscale":
        return f"seq/{slug(key[1])}-{slug(key[2], 30)}-{digest(*key)}.html"
    if kind == "dialogue":
        return f"dialogues/{slug(key[1], 30)}-{slug(key[2])}-{digest(key[1], key[2])}.html"
    if kind == "voice":
        if key == VOICE:
            return "voice/report.html"
        return f"voice/{slug(key[1], 30)}-on-{slug(key[2], 30)}-{digest(key[1], key[2])}.html"
    if kind == "voice_dialogue":
        return f"voice/dialogues/{slug(key[1], 30)}-{slug(key[2])}-{digest(key[1], key[2])}.html"
    if kind == "corrected":
        return f"corrected/{slug(key[1], 30)}-on-{slug(key[2], 30)}-{digest(key[1], key[2])}.html"
    if kind == "call":
        return f"calls/{slug(key[1], 16)}-{digest(*key[1:])}.html"
    if kind == "speech_item":
        return f"speech/item-{slug(key[1], 80)}-{digest(key[1])}.html"
    if kind == "clip":
        stem = posixpath.splitext(posixpath.basename(key[1]))[0]
        return f"clips/{slug(stem)}-{digest(key[1])}{suffix}"
    raise ValueError(f"no file name for {key!r}")


def relative_href(target: str, page: str, fragment: str = "") -> str:
    """The link from the export's file `page` to its file `target`, relative (it works from file://)."""
    here = posixpath.dirname(page) or "."
    href = quote(posixpath.relpath(target, here))
    return href + (f"#{quote(fragment, safe='-_.')}" if fragment else "")
