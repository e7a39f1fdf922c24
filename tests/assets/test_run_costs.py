"""reports/run_costs materialised: the estimate `eyt run` keeps beside the ledger's calls since, in the warehouse."""

import duckdb
import pytest
from dagster import materialize

from assets.reports.run_costs import run_costs
from eyt_dagster.definitions import Warehouse
from eyt_dagster.ops.plan import save_estimate
from resources.models.cache_backend import CALL_CACHE_FILE
from resources.models.call_cache import CallCache
from resources.models.model_access import ModelAccess, SlateAccess
from resources.storage.warehouse import WAREHOUSE_FILE

from support.slates import write_slate

pytestmark = pytest.mark.materialisation


def _materialise(data):
    resources = {
        "slate": SlateAccess(slate_path=str(write_slate(data.parent))),
        "models": ModelAccess(data_dir=str(data)),
        "io_manager": Warehouse(database=str(data / WAREHOUSE_FILE)),
    }
    assert materialize([run_costs], resources=resources).success
    with duckdb.connect(str(data / WAREHOUSE_FILE), read_only=True) as con:
        return con.execute("SELECT * FROM reports.run_costs ORDER BY model").df()


def test_the_latest_estimate_beside_the_calls_the_ledger_recorded_after_it(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    assert _materialise(data).empty  # no `eyt run` yet: an empty table, not an error

    with CallCache(data / CALL_CACHE_FILE) as cache:
        cache.record(
            role="target", model_id="gpt", purpose="respond:1", cached=False, tokens_in=10, tokens_out=5, cost_usd=0.5
        )
        line = {
            "model": "gpt",
            "role": "target",
            "embedded": False,
            "calls": {"mid": 2.0, "low": 1.0, "high": 3.0},
            "tokens_in": {"mid": 20.0, "low": 10.0, "high": 30.0},
            "tokens_out": {"mid": 10.0, "low": 5.0, "high": 15.0},
            "usd": {"mid": 0.2, "low": 0.1, "high": 0.3},
        }
        save_estimate(data, {"lines": [line]}, ledger_last_id=1, sequential=False)
        for _ in range(2):  # the command's own calls
            cache.record(
                role="target",
                model_id="gpt",
                purpose="respond:1",
                cached=False,
                tokens_in=10,
                tokens_out=5,
                cost_usd=0.1,
            )
        cache.record(
            role="target", model_id="gpt", purpose="respond:2", cached=True, tokens_in=10, tokens_out=5, cost_usd=0.1
        )

    row = _materialise(data).iloc[0]
    assert (row.model, row.role, row.est_calls, row.actual_calls, row.actual_tokens) == (
        "gpt",
        "target",
        2.0,
        2.0,
        30.0,
    )
    assert row.est_usd == pytest.approx(0.2) and row.actual_usd == pytest.approx(0.2)
    assert bool(row.calls_in_range) and bool(row.usd_in_range) and not row.sequential
