"""Loading the code location leaves the plotting and statistics libraries unimported.

Every process that loads the Dagster code location (the CLI's workers, the code server, `dagster job execute`)
imports `eyt_dagster.definitions`. matplotlib, scikit-learn, scipy and soundfile are used only inside the
functions that draw figures, compute statistics or read audio, and import them there; a module-level import of
one of them anywhere under the definitions adds its load time to every such process. This checks which modules
a fresh interpreter holds after the import, not a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[1]
DEFERRED = ("matplotlib", "sklearn", "scipy.signal", "scipy.stats", "soundfile")


def test_loading_the_code_location_does_not_import_plotting_or_statistics_libraries(tmp_path: Path) -> None:
    code = (
        "import json, sys; import eyt_dagster.definitions;"
        f"print(json.dumps(sorted(m for m in {list(DEFERRED)!r} if m in sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EYT_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == [], (
        f"importing eyt_dagster.definitions loaded {loaded}; import them inside the functions that use them "
        "(run `python -X importtime -c 'import eyt_dagster.definitions'` to find the importing module)"
    )
