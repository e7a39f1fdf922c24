"""Where the Dagster instance lives: $EYT_DATA_DIR/dagster_home, holding a link to the repository's instance
settings, deploy/local/dagster.yaml (one machine; deploy/dagster.yaml is a cluster's).

The Dagster UI otherwise makes a throw-away instance, so runs would not persist; `eyt` sets DAGSTER_HOME
for itself and prints the line to export for other Dagster commands. The settings are not at the repository's root:
the UI is started from there, and Dagster warns of a `dagster.yaml` in the folder it starts from that is not
DAGSTER_HOME's (it cannot tell that DAGSTER_HOME links to it).
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
INSTANCE_YAML = PROJECT_ROOT / "deploy" / "local" / "dagster.yaml"
_FORMER_INSTANCE_YAML = PROJECT_ROOT / "dagster.yaml"  # where the settings were until they moved to deploy/local


def ensure_dagster_home() -> Path:
    """Create DAGSTER_HOME (default $EYT_DATA_DIR/dagster_home) with the instance settings linked in as its
    dagster.yaml (a link to their former place is moved to the new one); export it."""
    home = dagster_home().resolve()
    home.mkdir(parents=True, exist_ok=True)
    link = home / "dagster.yaml"
    if link.is_symlink() and Path(os.readlink(link)) == _FORMER_INSTANCE_YAML and not link.exists():
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
