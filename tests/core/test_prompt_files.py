"""Prompt files: each is parsed once per process and version of the file, whatever keys the steps ask for, and a
missing prompt or an edit is noticed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eyt_dagster.core import prompts

pytestmark = pytest.mark.unit


def test_one_parse_serves_every_key_and_an_edit_is_read_again(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("a: {system: 'A {x}'}\nb: {system: 'B', user: 'u'}\n")
    parses: list[str] = []
    real = prompts.yaml.safe_load
    monkeypatch.setattr(prompts.yaml, "safe_load", lambda text: parses.append(text) or real(text))
    prompts._parsed.cache_clear()
    assert prompts.render("a", "system", path=path, x=1) == "A 1"
    assert prompts.load_prompts(path, ("b",))["b"]["user"] == "u"
    assert prompts.load_prompts(path, ("a", "b")).keys() == {"a", "b"}
    assert len(parses) == 1
    with pytest.raises(ValueError, match=r"p\.yaml: missing prompt\(s\) \['c'\]"):
        prompts.load_prompts(path, ("a", "c"))
    path.write_text("a: {system: 'changed {x}'}\n")
    os.utime(path, (1, 1))  # another version of the file, even within the clock's resolution
    assert prompts.render("a", "system", path=path, x=2) == "changed 2"
    assert len(parses) == 2
