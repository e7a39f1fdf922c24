"""Every environment variable the project reads, declared once: its name, type, default, meaning and the values it
accepts. docs/settings.md is generated from this module (`python -m eyt_dagster.core.env_settings --markdown`) and a
test keeps the two the same.

Values are read when asked, never at import: tests and users change the environment between two calls. A value that
is set but empty (or only blanks) counts as unset. A value that is not accepted raises SettingError (a ValueError)
naming the variable, the value and what it accepts, e.g. `EYT_PROGRESS_EVERY='abc' is not a number of seconds, 0 or
more`.

Each setting is a `Setting` (`DATA_DIR.get()`, `DATA_DIR.name`), and the ones read in many places have a function
of their own (`data_dir()`). The prompt-file overrides are one family per prompt file (`PROMPTS.get("zh")` reads
`EYT_PROMPTS_ZH`).

Besides the EYT_* variables, DAGSTER_HOME is declared here because `eyt` derives its default from the data
directory. Variables of other libraries (HF_HUB_OFFLINE, NUMBA_CACHE_DIR, ESPEAK_NG_*, AWS_*, DAGSTER_PG_*) stay
with the code that hands them over, and an API key is read only where it is used, under the name the slate gives.
Core layer: this module imports nothing of the project but the language list.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, cast
from urllib.parse import urlsplit

from eyt_dagster.core.languages import DEFAULT_LANGUAGE, LANGUAGES

T = TypeVar("T")


class SettingError(ValueError):
    """An environment variable holds a value its setting does not accept."""


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable: `parse` turns its text into the value (raising ValueError for a text it does not
    accept), `fallback` gives the value when it is unset or empty. `default` and `accepts` are what the docs show;
    `internal`: set by `eyt` for its own processes, not by users."""

    name: str
    meaning: str
    default: str
    accepts: str
    parse: Callable[[str], T]
    fallback: Callable[[], T]
    internal: bool = False

    def raw(self) -> str | None:
        """The variable's text without surrounding blanks, or None when unset or empty."""
        text = os.environ.get(self.name, "").strip()
        return text or None

    def get(self) -> T:
        """The value now (read from the environment at each call)."""
        text = self.raw()
        if text is None:
            return self.fallback()
        try:
            return self.parse(text)
        except ValueError:
            raise SettingError(f"{self.name}={text!r} is not {self.accepts}") from None


@dataclass(frozen=True)
class FileFamily:
    """A file override per language: `name` for the default language (English), `name_<LANG>` for the others
    (EYT_PROMPTS_ZH). Unset: the packaged file `packaged` (with `{language}` filled in)."""

    name: str
    meaning: str
    packaged: str

    def variable(self, language: str) -> str:
        return self.name if language == DEFAULT_LANGUAGE else f"{self.name}_{language.upper()}"

    def get(self, language: str = DEFAULT_LANGUAGE) -> Path | None:
        """The file the variable of `language` names, or None when it is unset or empty."""
        text = os.environ.get(self.variable(language), "").strip()
        return Path(text) if text else None


# -- parsers: each raises ValueError for a text it does not accept ------------------------------------------------

_ON = ("on", "1", "true", "yes")
_OFF = ("off", "0", "false", "no")
SWITCH = "on or off (also 1/0, true/false, yes/no)"


def _switch(text: str) -> bool:
    word = text.lower()
    if word in _ON:
        return True
    if word in _OFF:
        return False
    raise ValueError(text)


def _seconds(at_least: float = 0.0) -> Callable[[str], float]:
    """A number of seconds, 0 or more; a value under `at_least` counts as `at_least`."""

    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value < 0:
            raise ValueError(text)
        return max(at_least, value)

    return parse


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(text)
    return int(text)


def _choice(choices: Sequence[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.lower() not in choices:
            raise ValueError(text)
        return text.lower()

    return parse


def _http_url(text: str) -> str:
    url = text.rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(text)
    return url


def _path_or_off(text: str) -> Path | None:
    return None if text.lower() == "off" else Path(text)


# -- defaults derived from other settings ---------------------------------------------------------------------------


def _packaged_slate() -> Path:
    return Path(str(importlib_resources.files("eyt_dagster") / "slates" / "default.yaml"))


def _default_slots() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"eyt-endpoint-slots-{uid}"


def _user_cache(folder: str) -> Path:
    """`folder` under the project's folder of the user's cache ($XDG_CACHE_HOME, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eyt_dagster" / folder


def _default_numba_root() -> Path:
    return _user_cache("numba")


def _default_onnx_root() -> Path:
    return _user_cache("onnx")


DEFAULT_DATA_DIR = "data"
DEFAULT_VIEW_URL = "http://127.0.0.1:8765"
DEFAULT_PROGRESS_EVERY_S = 300.0
DEFAULT_PROGRESS_LOG_S = 30.0
MIN_PROGRESS_LOG_S = 1.0
CACHE_BACKENDS = ("auto", "sqlite", "postgres")
CacheBackendChoice = Literal["auto", "sqlite", "postgres"]


# -- the settings ---------------------------------------------------------------------------------------------------

DATA_DIR: Setting[Path] = Setting(
    name="EYT_DATA_DIR",
    meaning=(
        "The data directory: the Parquet warehouse, `eyt.duckdb`, the caches, the clips, the logs and (unless "
        "DAGSTER_HOME says otherwise) the Dagster instance. Relative paths are taken from the current directory."
    ),
    default="`./data`",
    accepts="a folder path",
    parse=Path,
    fallback=lambda: Path(DEFAULT_DATA_DIR),
)
SLATE: Setting[Path] = Setting(
    name="EYT_SLATE",
    meaning="The slate file: which models play which role, the pools, the sizes and every benchmark setting.",
    default="the packaged `eyt_dagster/slates/default.yaml` (embedded baselines only)",
    accepts="a slate YAML file",
    parse=Path,
    fallback=_packaged_slate,
)
DAGSTER_HOME: Setting[Path] = Setting(
    name="DAGSTER_HOME",
    meaning=(
        "Dagster's own variable: the folder of the Dagster instance (runs, event logs, schedules). `eyt` makes the "
        "default folder, links the project's `dagster.yaml` into it and exports it for the processes it starts."
    ),
    default="`$EYT_DATA_DIR/dagster_home`",
    accepts="a folder path",
    parse=Path,
    fallback=lambda: data_dir() / "dagster_home",
)
WAREHOUSE_URL: Setting[str | None] = Setting(
    name="EYT_WAREHOUSE_URL",
    meaning=(
        "An object store root for the warehouse's Parquet files (`s3://bucket/prefix`, docs/storage.md); everything "
        "else stays in the data directory."
    ),
    default="unset: `$EYT_DATA_DIR/warehouse`",
    accepts="an object store URL",
    parse=str,
    fallback=lambda: None,
)
CACHE_BACKEND: Setting[CacheBackendChoice] = Setting(
    name="EYT_CACHE_BACKEND",
    meaning=(
        "Where the call cache, the call ledger and the embedding cache live: `auto` follows the Dagster instance (its "
        "Postgres database when its run storage is Postgres, else SQLite files in the data directory); `postgres` "
        "insists on the instance's database; `sqlite` always uses the files."
    ),
    default="`auto`",
    accepts="one of " + ", ".join(CACHE_BACKENDS),
    parse=cast(Callable[[str], CacheBackendChoice], _choice(CACHE_BACKENDS)),
    fallback=lambda: "auto",
)
EMBEDDING_CACHE: Setting[bool] = Setting(
    name="EYT_EMBEDDING_CACHE",
    meaning=(
        "Keep sentence embeddings in a persistent cache beside the call cache. Faster reruns, but two fresh runs are "
        "no longer bit-identical (docs/throughput.md)."
    ),
    default="`off`",
    accepts=SWITCH,
    parse=_switch,
    fallback=lambda: False,
)
REPORT_CACHE: Setting[bool] = Setting(
    name="EYT_REPORT_CACHE",
    meaning=(
        "Keep the report tables' per-cell and per-pair parts in `cache/report_results.sqlite`, so a reports run after "
        "adding a target computes only that target's parts; `off` computes everything afresh and stores nothing."
    ),
    default="`on`",
    accepts=SWITCH,
    parse=_switch,
    fallback=lambda: True,
)
ENDPOINT_SLOTS: Setting[Path | None] = Setting(
    name="EYT_ENDPOINT_SLOTS",
    meaning=(
        "The folder of the slot files that make an endpoint's `max_concurrency` a budget of the whole machine "
        "(docs/endpoint-budgets.md); `off`: each process has the budget to itself."
    ),
    default="`$TMPDIR/eyt-endpoint-slots-<uid>`",
    accepts="a folder path or off",
    parse=_path_or_off,
    fallback=_default_slots,
)
NUMBA_CACHE_DIR: Setting[Path] = Setting(
    name="EYT_NUMBA_CACHE_DIR",
    meaning="The root of the folders librosa's numba kernels are compiled into, once per install (docs/storage.md).",
    default="`$XDG_CACHE_HOME/eyt_dagster/numba` (`~/.cache/eyt_dagster/numba` without XDG_CACHE_HOME)",
    accepts="a folder path",
    parse=Path,
    fallback=_default_numba_root,
)
NUMBA_CACHE_FILLING: Setting[bool] = Setting(
    name="EYT_NUMBA_CACHE_FILLING",
    meaning="Set in the subprocess that fills a numba cache folder, so that it does not try to fill one itself.",
    default="`off`",
    accepts=SWITCH,
    parse=_switch,
    fallback=lambda: False,
    internal=True,
)
ONNX_CACHE_DIR: Setting[Path | None] = Setting(
    name="EYT_ONNX_CACHE_DIR",
    meaning=(
        "The folder the sentence encoder's ONNX graph is kept in, once per model and library versions, so that a "
        "worker process encodes without loading torch (docs/storage.md); `off`: each process exports the graph "
        "again."
    ),
    default="`$XDG_CACHE_HOME/eyt_dagster/onnx` (`~/.cache/eyt_dagster/onnx` without XDG_CACHE_HOME)",
    accepts="a folder path or off",
    parse=_path_or_off,
    fallback=_default_onnx_root,
)
PROGRESS_EVERY: Setting[float] = Setting(
    name="EYT_PROGRESS_EVERY",
    meaning=(
        "Without a terminal, `eyt run` and `eyt refresh` print a progress line for a running run each time its "
        "state changes (its step, the step's total, another tenth of its items), and again when it has stayed the "
        "same this long (the `--progress-every` option sets it); `0` prints none."
    ),
    default=f"`{DEFAULT_PROGRESS_EVERY_S:g}`",
    accepts="a number of seconds, 0 or more",
    parse=_seconds(),
    fallback=lambda: DEFAULT_PROGRESS_EVERY_S,
)
PROGRESS_LOG_S: Setting[float] = Setting(
    name="EYT_PROGRESS_LOG_S",
    meaning="A running step writes a progress line to its run log at least this often.",
    default=f"`{DEFAULT_PROGRESS_LOG_S:g}`",
    accepts=f"a number of seconds, 0 or more (under {MIN_PROGRESS_LOG_S:g} counts as {MIN_PROGRESS_LOG_S:g})",
    parse=_seconds(MIN_PROGRESS_LOG_S),
    fallback=lambda: DEFAULT_PROGRESS_LOG_S,
)
TORCH_THREADS: Setting[int | None] = Setting(
    name="EYT_TORCH_THREADS",
    meaning=(
        "The threads torch may use for one sentence encoding in this process. `eyt run --parallel N` sets it in each "
        "worker to the cores divided among the workers, unless it is set already."
    ),
    default="unset: torch's default (one per core)",
    accepts="a whole number of threads, 1 or more",
    parse=_positive_int,
    fallback=lambda: None,
)
VIEW_URL: Setting[str] = Setting(
    name="EYT_VIEW_URL",
    meaning=(
        "The address of `eyt view`, the web explorer: the links in the Dagster UI and the reports point there, and "
        "`eyt view` serves on its port when it is free (docs/explorer.md)."
    ),
    default=f"`{DEFAULT_VIEW_URL}`",
    accepts=f"an http(s) address such as {DEFAULT_VIEW_URL}",
    parse=_http_url,
    fallback=lambda: DEFAULT_VIEW_URL,
)
AUTOMATION: Setting[bool] = Setting(
    name="EYT_AUTOMATION",
    meaning=(
        "`on`: the automation sensor starts running when the code location loads, so the daemon keeps the slate's "
        "partitions up to date (`eyt dev --automation` sets it; docs/refresh.md); otherwise it is switched on in the "
        "UI."
    ),
    default="`off`",
    accepts=SWITCH,
    parse=_switch,
    fallback=lambda: False,
)
PROFILE_DIR: Setting[Path | None] = Setting(
    name="EYT_PROFILE_DIR",
    meaning=(
        "A folder: the `eyt` command's process and each worker process it starts run under cProfile, every thread "
        "timed by its own CPU clock, and write `<label>-<pid>.prof` and `.json` there when they end (for "
        "bench/cpu_profile.py, docs/throughput.md#where-the-cpu-of-a-call-goes). Slows the run; unset: no profile."
    ),
    default="unset: no profile",
    accepts="a folder path",
    parse=Path,
    fallback=lambda: None,
)
COMMAND_PID: Setting[int | None] = Setting(
    name="EYT_COMMAND_PID",
    meaning=(
        "Set by `eyt` for the processes it starts: the command's own process id, so that its workers' waits on "
        "`eyt.duckdb` do not warn about each other."
    ),
    default="unset",
    accepts="a process id",
    parse=_positive_int,
    fallback=lambda: None,
    internal=True,
)

SETTINGS: tuple[Setting[Any], ...] = (
    DATA_DIR,
    SLATE,
    DAGSTER_HOME,
    WAREHOUSE_URL,
    CACHE_BACKEND,
    EMBEDDING_CACHE,
    REPORT_CACHE,
    ENDPOINT_SLOTS,
    NUMBA_CACHE_DIR,
    NUMBA_CACHE_FILLING,
    ONNX_CACHE_DIR,
    PROGRESS_EVERY,
    PROGRESS_LOG_S,
    TORCH_THREADS,
    VIEW_URL,
    AUTOMATION,
    PROFILE_DIR,
    COMMAND_PID,
)

PROMPTS = FileFamily(
    "EYT_PROMPTS", "EYT-Bench's prompt file (simulator, target, judge templates).", "default_{language}.yaml"
)
SPEECH_PROMPTS = FileFamily(
    "EYT_SPEECH_PROMPTS", "SpeechEQ's generator prompt file (scenarios, dialogues, tones).", "speech_{language}.yaml"
)
SPEECH_EVAL_PROMPTS = FileFamily(
    "EYT_SPEECH_EVAL_PROMPTS",
    "SpeechEQ's evaluation prompt file (forced-choice rounds, persona conditions).",
    "speech_eval_{language}.yaml",
)
FILE_FAMILIES: tuple[FileFamily, ...] = (PROMPTS, SPEECH_PROMPTS, SPEECH_EVAL_PROMPTS)


# -- accessors of the settings read in several places ---------------------------------------------------------------


def data_dir() -> Path:
    """The data directory, absolute (EYT_DATA_DIR, default ./data): the one place its default is derived."""
    return DATA_DIR.get().resolve()


def dagster_home() -> Path:
    """The Dagster instance's folder: DAGSTER_HOME, else <data directory>/dagster_home."""
    return DAGSTER_HOME.get()


def slate_path() -> Path:
    """The slate file: EYT_SLATE, else the packaged default slate."""
    return SLATE.get()


def default_slate_path() -> Path:
    """The packaged default slate (embedded baselines only)."""
    return _packaged_slate()


def view_url() -> str:
    """The explorer's address without a trailing slash."""
    return VIEW_URL.get()


# -- the docs -------------------------------------------------------------------------------------------------------

DOCS_BEGIN = "<!-- settings table: generated by `python -m eyt_dagster.core.env_settings --markdown` -->"
DOCS_END = "<!-- end of the generated settings table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """The settings as docs/settings.md shows them, between DOCS_BEGIN and DOCS_END."""
    lines = [DOCS_BEGIN, "", "| variable | default | accepts | meaning |", "| --- | --- | --- | --- |"]
    for setting in SETTINGS:
        meaning = setting.meaning + (" Internal: not for users to set." if setting.internal else "")
        lines.append(f"| `{setting.name}` | {_cell(setting.default)} | {_cell(setting.accepts)} | {_cell(meaning)} |")
    for family in FILE_FAMILIES:
        others = ", ".join(f"`{family.variable(lang)}`" for lang in LANGUAGES if lang != DEFAULT_LANGUAGE)
        packaged = family.packaged.format(language="<language>")
        lines.append(
            f"| `{family.name}`, `{family.name}_<LANG>` | the packaged `eyt_dagster/prompts/{packaged}` | a file path "
            f"| {_cell(family.meaning)} `{family.name}` replaces the English file, `{family.name}_<LANG>` the file "
            f"of another language (here: {others}). |"
        )
    lines += ["", DOCS_END]
    return "\n".join(lines) + "\n"


def docs_block(text: str) -> str | None:
    """The generated block of a docs page's text (markers included), or None when it has none."""
    start, end = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if start < 0 or end < start:
        return None
    return text[start : end + len(DOCS_END)] + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    if len(args) == 2 and args[0] == "--write":
        page = Path(args[1])
        text = page.read_text(encoding="utf-8")
        block = docs_block(text)
        if block is None:
            sys.stderr.write(f"{page} has no generated settings block ({DOCS_BEGIN} ... {DOCS_END})\n")
            return 1
        page.write_text(text.replace(block, markdown()), encoding="utf-8")
        return 0
    sys.stderr.write("usage: python -m eyt_dagster.core.env_settings --markdown | --write docs/settings.md\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
