"""Slate files and slate entries for the tests: `write_slate` (the default slate, small, with overrides) and
`remote` (one model entry served by an OpenAI-compatible server, e.g. the localhost server of
support/localhost_server.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from eyt_dagster.slate import default_slate_path


def write_slate(directory: Path, **overrides) -> Path:
    """The default slate with overrides, written to directory/slate.yaml (small sizes for tests)."""
    slate = yaml.safe_load(default_slate_path().read_text())
    slate.update(
        {
            "pool_size": 24,
            "dialogues_per_pool": 4,
            "t_max": 6,
            "bootstrap_resamples": 200,
            "cross_judge_dialogues": 6,
            "voice": {"dialogues_per_pool": 2},
        }
    )
    if "targets" in overrides:  # the default reasoning pair names default targets
        slate["reasoning_pairs"] = []
    slate.update(overrides)
    path = directory / "slate.yaml"
    path.write_text(yaml.safe_dump(slate, sort_keys=False))
    return path


KEY = "sk-test-ab12cd34ef56"  # the API key the remote-path tests put in EYT_TEST_KEY (and look for in every file)

# What the remote-path tests give each model: the key's variable and a budget of two concurrent calls.
STUB_ENDPOINT: dict[str, Any] = {"api_key_env": "EYT_TEST_KEY", "max_concurrency": 2}


def remote(model_id: str, base_url: str, *, family: str | None = None, **extra: Any) -> dict[str, Any]:
    """A slate entry for a chat model behind an OpenAI-compatible server at base_url: model `<id>-v1` of family
    `family` (the id when not given); extra fields (a key variable, a budget, retries, benchmarks, ...) are added
    as given and override these."""
    return {
        "id": model_id,
        "provider": "openai",
        "model": f"{model_id}-v1",
        "family": model_id if family is None else family,
        "base_url": base_url,
        **extra,
    }
