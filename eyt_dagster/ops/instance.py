"""Where the Dagster instance lives: $EYT_DATA_DIR/dagster_home, holding a link to the repository's instance
settings, dagster.yaml at the repository's root (one machine; deploy/dagster.yaml is a cluster's).

The Dagster UI otherwise makes a throw-away instance, so runs would not persist; `eyt` sets DAGSTER_HOME
for itself and prints the line to export for other Dagster commands. `eyt dev` starts the UI from DAGSTER_HOME, not
from the repository's root: Dagster warns of a `dagster.yaml` in the folder it starts from that is not DAGSTER_HOME's
(it cannot tell that DAGSTER_HOME links to it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from eyt_dagster.core.env_settings import DAGSTER_HOME, dagster_home
from eyt_dagster.partitions import TARGET_PARTITION_SETS
from eyt_dagster.slate import Slate, load_slate, slate_path_from_env

if TYPE_CHECKING:
    from dagster import DagsterInstance

PROJECT_ROOT = Path(__file__).resolve().parents[2]
INSTANCE_YAML = PROJECT_ROOT / "dagster.yaml"


def ensure_dagster_home() -> Path:
    """Create DAGSTER_HOME (default $EYT_DATA_DIR/dagster_home) with the instance settings linked in as its
    dagster.yaml (a dangling link is re-pointed); export it."""
    home = dagster_home().resolve()
    home.mkdir(parents=True, exist_ok=True)
    link = home / "dagster.yaml"
    if link.is_symlink() and not link.exists():
        link.unlink()
    if not link.exists() and not link.is_symlink() and INSTANCE_YAML.exists():
        link.symlink_to(INSTANCE_YAML)
    os.environ[DAGSTER_HOME.name] = str(home)
    return home


def register_targets(instance: DagsterInstance, slate: Slate | None = None) -> list[str]:
    """Add every slate target as a key of its benchmarks' dynamic target partitions (`targets` for EYT-Bench,
    `speech_targets` for SpeechEQ); return the new keys as 'set:id'."""
    slate = slate or load_slate(slate_path_from_env())
    added = []
    for benchmark, name in TARGET_PARTITION_SETS.items():
        existing = set(instance.get_dynamic_partitions(name))
        new = [t.id for t in slate.targets_of(benchmark) if t.id not in existing]
        if new:
            instance.add_dynamic_partitions(name, new)
            added += [f"{name}:{key}" for key in new]
    return added
