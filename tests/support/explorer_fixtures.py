"""The fixtures every explorer test module shares: a hand-made warehouse in a temporary data directory (built by
the module's `build`), the explorer app over it, and its Warehouse reader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eyt_dagster.explorer.app import create_app
from eyt_dagster.explorer.reads import Warehouse


def explorer_fixtures(name: str, build: Callable[[Path], Any]) -> tuple[Any, Any]:
    """(data, app) module fixtures: `data` is (the data directory, what `build` returned)."""

    @pytest.fixture(scope="module")
    def data(tmp_path_factory):
        directory = tmp_path_factory.mktemp(name) / "data"
        directory.mkdir()
        return directory, build(directory)

    @pytest.fixture(scope="module")
    def app(data):
        return create_app(data[0])

    return data, app


def wh(data) -> Warehouse:
    return Warehouse(data[0])
