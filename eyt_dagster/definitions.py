"""The code location `eyt_dagster`: the one Definitions object (assets, jobs, resources).

Settings come from the environment when the location loads: `EYT_DATA_DIR` (default ./data) holds the
warehouse `eyt.duckdb` and the call cache; `EYT_SLATE` names the slate (default: the packaged one).
"""

from __future__ import annotations

import warnings

from dagster import BetaWarning, PreviewWarning

warnings.filterwarnings("ignore", category=BetaWarning)
warnings.filterwarnings("ignore", category=PreviewWarning)

from dagster import Definitions, in_process_executor  # noqa: E402

from assets.dialogue.chat_seeds import chat_seeds  # noqa: E402
from assets.dialogue.dialogue_turns import dialogue_turns  # noqa: E402
from assets.dialogue.intent_similarity import intent_similarity  # noqa: E402
from assets.dialogue.judging import final_intent_verdicts, judge_verdicts  # noqa: E402
from assets.dialogue.persona_pool import persona_pool  # noqa: E402
from assets.reports.leaderboard import leaderboard  # noqa: E402
from eyt_dagster.config import slate_path_from_env  # noqa: E402
from eyt_dagster.jobs import JOBS  # noqa: E402
from resources.models import BenchmarkResource  # noqa: E402
from resources.warehouse import WarehouseIOManager, data_dir, warehouse_path  # noqa: E402

ASSETS = [
    persona_pool,
    chat_seeds,
    dialogue_turns,
    judge_verdicts,
    final_intent_verdicts,
    intent_similarity,
    leaderboard,
]


def build_resources() -> dict[str, object]:
    return {
        "eyt": BenchmarkResource(slate_path=str(slate_path_from_env()), data_dir=str(data_dir())),
        "io_manager": WarehouseIOManager(database=str(warehouse_path())),
    }


defs = Definitions(assets=ASSETS, jobs=JOBS, resources=build_resources(), executor=in_process_executor)
