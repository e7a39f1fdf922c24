"""Where `eyt view` answers, and the addresses of its pages that other places link to (the Dagster UI's asset
metadata, the HTML report's model cards). One place for the explorer's routes: its app builds its own links with
these functions too.

The explorer's address is `EYT_VIEW_URL` when set, else http://127.0.0.1:8765; `eyt view` serves on that port
when it is free (else on any free port, and says that the links elsewhere then point to the wrong place). The
links are written when an asset is materialised or the report is built: they open the pages of whatever explorer
answers there at the time they are followed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from eyt_dagster.core import env_settings

VIEW_URL_ENV = env_settings.VIEW_URL.name
DEFAULT_VIEW_URL = env_settings.DEFAULT_VIEW_URL


def view_url() -> str:
    """The explorer's address without a trailing slash (EYT_VIEW_URL, else DEFAULT_VIEW_URL); SettingError (a
    ValueError) when it is not an http(s) address."""
    return env_settings.view_url()


def view_port() -> int:
    """The port of view_url() (80/443 when it names none)."""
    parts = urlsplit(view_url())
    return parts.port or (443 if parts.scheme == "https" else 80)


def _query(path: str, params: dict[str, Any]) -> str:
    shown = {k: v for k, v in params.items() if v not in (None, "")}
    return path + ("?" + urlencode(shown) if shown else "")


# -- the explorer's routes, as paths on its server ---------------------------------------------------------------


def leaderboard_path(target: str = "", pool: str = "", explain: str = "") -> str:
    """The leaderboard, of one target (and one pool) when named; `explain` names one of the numbers of a cell
    (target and pool named) whose explanation the page shows opened (`corrected_<metric>`: a human-corrected
    figure's)."""
    return _query("/", {"target": target, "pool": pool, "explain": explain})


def dialogues_path(**params: Any) -> str:
    return _query("/dialogues", params)


def dialogue_path(target: str, seed_id: str, repeat: int = 0, explain: str = "") -> str:
    """A dialogue's page; `repeat` r > 0 shows its r-th repeated play (the slate's `repeats`); `explain` names one of
    its numbers (a dialogue_scores column) whose arithmetic the page shows opened."""
    path = f"/dialogue/{quote(target, safe='')}/{quote(seed_id, safe='')}"
    return _query(path, {"repeat": repeat or None, "explain": explain})


def call_path(key: str, prompt: str | None = None) -> str:
    """One call; `prompt` is the prompt-file hash of the row that links to it (the call cache does not know it)."""
    return f"/call/{quote(key, safe='')}" + (f"?{urlencode({'prompt': prompt})}" if prompt else "")


def compare_path(seed_id: str, targets: list[str]) -> str:
    """Every target named, also an empty id (the page then says it has no such dialogue)."""
    return "/compare?" + urlencode([("seed", seed_id), *(("target", t) for t in targets)])


def pairs_path(**params: Any) -> str:
    return _query("/pairs", params)


def judges_path(**params: Any) -> str:
    return _query("/judges", params)


def corrected_path(target: str, pool: str, explain: str = "") -> str:
    """A target x pool's judge-made numbers corrected by human labels (dialogue.judge_corrected); `explain` names a
    metric (empathy, persona, anthropomorphic, ficr, satisfaction) whose arithmetic the page shows opened."""
    return _query("/corrected", {"target": target, "pool": pool, "explain": explain})


def voice_path(**params: Any) -> str:
    """The spoken EYT-Bench's page: its gap, ASR errors and prosody effect, and a cell's voiced dialogues."""
    return _query("/voice", params)


def voice_dialogue_path(target: str, seed_id: str, explain: str = "") -> str:
    """A voiced dialogue's page; `explain` names one of its numbers ('<mode>_<dialogue_scores column>', e.g.
    voice_empathy) whose arithmetic the page shows opened."""
    return _query(f"/voice/dialogue/{quote(target, safe='')}/{quote(seed_id, safe='')}", {"explain": explain})


def sequential_path() -> str:
    """The sequential design's page: every comparison's verdict and the dialogues each target played."""
    return "/sequential"


def costs_path() -> str:
    """Where the money went: the latest `eyt run`'s estimated against actual cost per model and role."""
    return "/costs"


def speech_path(**params: Any) -> str:
    return _query("/speech", params)


def speech_item_path(dataset_id: str) -> str:
    return f"/speech/item/{quote(dataset_id, safe='')}"


def speech_build_path(**params: Any) -> str:
    return _query("/speech/build", params)


def seq_path(**params: Any) -> str:
    """SpeechEQ's SEQ leaderboard of one persona condition (`condition`, `sort`, `order`), with its subscales."""
    return _query("/seq", params)


def seq_subscale_path(slug: str, **params: Any) -> str:
    """One EQ-i subscale: each target's accuracies on it and its items with every target's trajectory."""
    return _query(f"/seq/subscale/{quote(slug, safe='')}", params)


def absolute(path: str) -> str:
    """A path above on the explorer at view_url()."""
    return view_url() + path
