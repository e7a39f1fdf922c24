"""The packaged baselines on a small slate: 5 dialogues per pool and at most 3 turns, every text baseline of the
default slate (`eyt run --no-speech`). Short dialogues are where identical intent descriptions give a cosine of
1.0000005 and fewer than three turns leave directional alignment undefined: every run must still succeed, and every
bounded number stay inside its bounds."""

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml

from eyt_dagster.eyt_bench.encoder_calibration import DRIFT_MAX
from eyt_dagster.slate import default_slate_path

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
EYT = Path(sys.executable).parent / "eyt"


@pytest.mark.slow
def test_every_baseline_on_five_dialogues_of_three_turns(tmp_path):
    slate = yaml.safe_load(default_slate_path().read_text())
    slate.update(dialogues_per_pool=5, t_max=3)
    path = tmp_path / "slate.yaml"
    path.write_text(yaml.safe_dump(slate, sort_keys=False))
    env = {**os.environ, "EYT_DATA_DIR": str(tmp_path / "data"), "EYT_SLATE": str(path), "HF_HUB_OFFLINE": "1"}
    env.pop("DAGSTER_HOME", None)
    run = subprocess.run([EYT, "run", "--no-speech"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "FAILED" not in run.stdout
    targets = [t["id"] for t in slate["targets"] if "eyt_bench" in t.get("benchmarks", ["eyt_bench"])]
    with duckdb.connect(str(tmp_path / "data" / "eyt.duckdb"), read_only=True) as con:
        cells = con.execute("SELECT target, pool, n_dialogues FROM dialogue.leaderboard ORDER BY 1, 2").fetchall()
        cosines = con.execute(
            "SELECT min(least(cos_gold_pred, cos_pred_final)), max(greatest(cos_gold_pred, cos_pred_final)), "
            "count(*) FILTER (WHERE cos_gold_pred = 1.0) FROM dialogue.intent_similarity"
        ).fetchone()
        drift = con.execute("SELECT min(drift), max(drift) FROM dialogue.dialogue_scores").fetchone()
        alignment = con.execute(
            "SELECT count(*) FILTER (WHERE directional_alignment IS NULL), "
            "min(directional_alignment), max(directional_alignment) FROM dialogue.dialogue_scores"
        ).fetchone()
    assert sorted({c[0] for c in cells}) == sorted(targets) and all(n == 5 for _, _, n in cells)
    assert -1.0 <= cosines[0] and cosines[1] <= 1.0
    assert cosines[2] > 0  # identical descriptions happened, and came out as exactly 1
    assert 0.0 <= drift[0] and drift[1] <= DRIFT_MAX
    assert alignment[1] is None or -1.0 <= alignment[1] <= alignment[2] <= 1.0
