"""The settings module (eyt_dagster/core/env_settings.py): each variable's default, a set value and a bad value's
message; values read at call time; the prompt-file families; docs/settings.md generated from it; and no module of
the code location reading an EYT_* variable past it."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from eyt_dagster.core import env_settings as es
from eyt_dagster.core.env_settings import SettingError

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """Every declared variable unset, so each test starts from the defaults."""
    for setting in es.SETTINGS:
        monkeypatch.delenv(setting.name, raising=False)
    for family in es.FILE_FAMILIES:
        for language in ("en", "zh"):
            monkeypatch.delenv(family.variable(language), raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)


def test_data_dir_defaults_to_data_under_the_current_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert es.data_dir() == (tmp_path / "data").resolve()
    assert es.DATA_DIR.get() == Path("data")
    monkeypatch.setenv("EYT_DATA_DIR", "  ")  # empty counts as unset
    assert es.data_dir() == (tmp_path / "data").resolve()
    monkeypatch.setenv("EYT_DATA_DIR", "elsewhere")
    assert es.data_dir() == (tmp_path / "elsewhere").resolve()
    monkeypatch.setenv("EYT_DATA_DIR", str(tmp_path / "abs"))
    assert es.data_dir() == tmp_path / "abs"


def test_dagster_home_follows_the_data_directory_unless_set(monkeypatch, tmp_path):
    monkeypatch.setenv("EYT_DATA_DIR", str(tmp_path / "d"))
    assert es.dagster_home() == tmp_path / "d" / "dagster_home"
    assert es.DAGSTER_HOME.raw() is None
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert es.dagster_home() == tmp_path / "home"


def test_slate_defaults_to_the_packaged_slate(monkeypatch, tmp_path):
    assert es.slate_path() == es.default_slate_path()
    assert es.default_slate_path().name == "default.yaml" and es.default_slate_path().is_file()
    monkeypatch.setenv("EYT_SLATE", str(tmp_path / "s.yaml"))
    assert es.slate_path() == tmp_path / "s.yaml"


def test_warehouse_url(monkeypatch):
    assert es.WAREHOUSE_URL.get() is None
    monkeypatch.setenv("EYT_WAREHOUSE_URL", " s3://bucket/prefix/ ")
    assert es.WAREHOUSE_URL.get() == "s3://bucket/prefix/"


def test_cache_backend(monkeypatch):
    assert es.CACHE_BACKEND.get() == "auto"
    monkeypatch.setenv("EYT_CACHE_BACKEND", " Postgres ")
    assert es.CACHE_BACKEND.get() == "postgres"
    monkeypatch.setenv("EYT_CACHE_BACKEND", "nfs")
    with pytest.raises(SettingError, match=r"^EYT_CACHE_BACKEND='nfs' is not one of auto, sqlite, postgres$"):
        es.CACHE_BACKEND.get()


@pytest.mark.parametrize(
    ("setting", "default"),
    [(es.EMBEDDING_CACHE, False), (es.REPORT_CACHE, True), (es.AUTOMATION, False), (es.NUMBA_CACHE_FILLING, False)],
)
def test_switches(monkeypatch, setting, default):
    assert setting.get() is default
    for on in ("on", "ON", "1", "true", "yes"):
        monkeypatch.setenv(setting.name, on)
        assert setting.get() is True
    for off in ("off", "0", "False", "no"):
        monkeypatch.setenv(setting.name, off)
        assert setting.get() is False
    monkeypatch.setenv(setting.name, "maybe")
    with pytest.raises(SettingError, match=rf"^{setting.name}='maybe' is not on or off \(also 1/0"):
        setting.get()


def test_endpoint_slots(monkeypatch, tmp_path):
    assert es.ENDPOINT_SLOTS.get() == Path(tempfile.gettempdir()) / f"eyt-endpoint-slots-{os.getuid()}"
    monkeypatch.setenv("EYT_ENDPOINT_SLOTS", "OFF")
    assert es.ENDPOINT_SLOTS.get() is None
    monkeypatch.setenv("EYT_ENDPOINT_SLOTS", str(tmp_path))
    assert es.ENDPOINT_SLOTS.get() == tmp_path


def test_numba_cache_dir(monkeypatch, tmp_path):
    assert es.NUMBA_CACHE_DIR.get() == Path.home() / ".cache" / "eyt_dagster" / "numba"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert es.NUMBA_CACHE_DIR.get() == tmp_path / "xdg" / "eyt_dagster" / "numba"
    monkeypatch.setenv("EYT_NUMBA_CACHE_DIR", str(tmp_path / "root"))
    assert es.NUMBA_CACHE_DIR.get() == tmp_path / "root"


def test_onnx_cache_dir(monkeypatch, tmp_path):
    assert es.ONNX_CACHE_DIR.get() == Path.home() / ".cache" / "eyt_dagster" / "onnx"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert es.ONNX_CACHE_DIR.get() == tmp_path / "xdg" / "eyt_dagster" / "onnx"
    monkeypatch.setenv("EYT_ONNX_CACHE_DIR", str(tmp_path / "graphs"))
    assert es.ONNX_CACHE_DIR.get() == tmp_path / "graphs"
    monkeypatch.setenv("EYT_ONNX_CACHE_DIR", "OFF")
    assert es.ONNX_CACHE_DIR.get() is None


def test_progress_every(monkeypatch):
    assert es.PROGRESS_EVERY.get() == 300.0
    monkeypatch.setenv("EYT_PROGRESS_EVERY", "0")
    assert es.PROGRESS_EVERY.get() == 0.0
    monkeypatch.setenv("EYT_PROGRESS_EVERY", "2.5")
    assert es.PROGRESS_EVERY.get() == 2.5
    for bad in ("abc", "-1", "inf", "nan"):
        monkeypatch.setenv("EYT_PROGRESS_EVERY", bad)
        with pytest.raises(SettingError, match=rf"^EYT_PROGRESS_EVERY='{bad}' is not a number of seconds, 0 or more$"):
            es.PROGRESS_EVERY.get()


def test_progress_log_seconds(monkeypatch):
    assert es.PROGRESS_LOG_S.get() == 30.0
    monkeypatch.setenv("EYT_PROGRESS_LOG_S", "5")
    assert es.PROGRESS_LOG_S.get() == 5.0
    monkeypatch.setenv("EYT_PROGRESS_LOG_S", "0.2")  # under one second counts as one, as it always did
    assert es.PROGRESS_LOG_S.get() == 1.0
    monkeypatch.setenv("EYT_PROGRESS_LOG_S", "soon")
    with pytest.raises(SettingError, match=r"^EYT_PROGRESS_LOG_S='soon' is not a number of seconds, 0 or more"):
        es.PROGRESS_LOG_S.get()


def test_torch_threads(monkeypatch):
    assert es.TORCH_THREADS.get() is None
    monkeypatch.setenv("EYT_TORCH_THREADS", "3")
    assert es.TORCH_THREADS.get() == 3
    for bad in ("0", "two", "1.5"):
        monkeypatch.setenv("EYT_TORCH_THREADS", bad)
        with pytest.raises(SettingError, match=rf"^EYT_TORCH_THREADS='{bad}' is not a whole number of threads, 1 or"):
            es.TORCH_THREADS.get()


def test_view_url(monkeypatch):
    assert es.view_url() == "http://127.0.0.1:8765"
    monkeypatch.setenv("EYT_VIEW_URL", "https://lab-box:9000/")
    assert es.view_url() == "https://lab-box:9000"
    monkeypatch.setenv("EYT_VIEW_URL", "lab-box")
    with pytest.raises(SettingError, match=r"^EYT_VIEW_URL='lab-box' is not an http\(s\) address such as http://"):
        es.view_url()


def test_command_pid(monkeypatch):
    assert es.COMMAND_PID.get() is None
    monkeypatch.setenv("EYT_COMMAND_PID", "4242")
    assert es.COMMAND_PID.get() == 4242
    monkeypatch.setenv("EYT_COMMAND_PID", "me")
    with pytest.raises(SettingError, match=r"^EYT_COMMAND_PID='me' is not a process id$"):
        es.COMMAND_PID.get()


def test_a_setting_error_is_a_value_error():
    assert issubclass(SettingError, ValueError)  # callers that fall back on a ValueError keep doing so


def test_values_are_read_at_each_call(monkeypatch):
    monkeypatch.setenv("EYT_PROGRESS_EVERY", "1")
    assert es.PROGRESS_EVERY.get() == 1.0
    monkeypatch.setenv("EYT_PROGRESS_EVERY", "2")
    assert es.PROGRESS_EVERY.get() == 2.0


def test_prompt_families_name_one_variable_per_language(monkeypatch, tmp_path):
    from eyt_dagster.eyt_bench.prompts import prompts_path
    from eyt_dagster.speech_eq.prompts import speech_eval_prompts_path, speech_prompts_path

    assert es.PROMPTS.variable("en") == "EYT_PROMPTS" and es.PROMPTS.variable("zh") == "EYT_PROMPTS_ZH"
    assert es.SPEECH_EVAL_PROMPTS.variable("zh") == "EYT_SPEECH_EVAL_PROMPTS_ZH"
    assert es.PROMPTS.get("zh") is None
    assert prompts_path("zh").name == "default_zh.yaml" and prompts_path().name == "default_en.yaml"
    assert speech_prompts_path("zh").name == "speech_zh.yaml"
    assert speech_eval_prompts_path().name == "speech_eval_en.yaml"
    monkeypatch.setenv("EYT_PROMPTS_ZH", str(tmp_path / "zh.yaml"))
    monkeypatch.setenv("EYT_SPEECH_PROMPTS", str(tmp_path / "speech.yaml"))
    assert prompts_path("zh") == tmp_path / "zh.yaml" and prompts_path("en").name == "default_en.yaml"
    assert speech_prompts_path() == tmp_path / "speech.yaml" and speech_prompts_path("zh").name == "speech_zh.yaml"


def test_every_variable_is_declared_once():
    names = [s.name for s in es.SETTINGS] + [f.name for f in es.FILE_FAMILIES]
    assert len(names) == len(set(names))
    for setting in es.SETTINGS:
        assert setting.meaning.strip() and setting.default.strip() and setting.accepts.strip(), setting.name


def test_docs_settings_page_is_generated_from_the_module():
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert es.docs_block(page) == es.markdown(), (
        "docs/settings.md and eyt_dagster/core/env_settings.py disagree: run "
        "`python -m eyt_dagster.core.env_settings --write docs/settings.md`"
    )


def test_the_markdown_lists_every_variable():
    text = es.markdown()
    for setting in es.SETTINGS:
        assert f"| `{setting.name}` |" in text
    for family in es.FILE_FAMILIES:
        assert f"`{family.name}_ZH`" in text


def test_write_replaces_only_the_generated_block(tmp_path, capsys):
    page = tmp_path / "settings.md"
    page.write_text(f"intro\n\n{es.DOCS_BEGIN}\nold\n{es.DOCS_END}\n\nafter\n", encoding="utf-8")
    assert es.main(["--write", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == f"intro\n\n{es.markdown()}\nafter\n"
    assert es.main(["--markdown"]) == 0 and capsys.readouterr().out == es.markdown()
    assert es.main([]) == 2


# An EYT_* variable read past the module: os.environ.get("EYT_..."), os.environ["EYT_..."], os.getenv("EYT_...").
DIRECT_READ = re.compile(r"""(?:environ\.get|getenv)\(\s*f?["']EYT_|environ\[\s*f?["']EYT_""")


def test_no_module_reads_an_eyt_variable_past_the_settings_module():
    found = []
    for package in ("eyt_dagster", "assets", "resources"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "env_settings.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if DIRECT_READ.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "read these through eyt_dagster/core/env_settings.py:\n" + "\n".join(found)
