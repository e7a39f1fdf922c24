"""bench/inspect_compare.py: the shape's call counts and latency bound, by hand (Inspect AI is not needed)."""

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "inspect_compare.py"


def load_script():
    spec = importlib.util.spec_from_file_location("inspect_compare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_script_loads_without_inspect_ai():
    load_script()
    assert "inspect_ai" not in sys.modules


def test_full_shape_is_4160_calls_bound_by_the_target_pool():
    shape = load_script().Shape(dialogues=130, turns=8, max_connections=32)
    # per dialogue: 8 turns x (perception + reply) to the target, 8 simulator turns, 8 judge verdicts
    assert shape.calls_by_role() == {"target": 2080, "simulator": 1040, "judge": 1040}
    assert shape.calls() == 130 * 8 * 3 + 130 * 8 == 4160
    # the target needs ceil(2080 / 32) = 65 rounds; one dialogue's chain is 2 x 8 + 1 = 17 calls
    assert shape.waves() == 65
    assert shape.chain() == 17
    assert shape.ideal_s(0.2) == 65 * 0.2


def test_small_shape_is_bound_by_the_dependent_chain():
    shape = load_script().Shape(dialogues=3, turns=2, max_connections=4)
    # target 3 x 2 x 2 = 12 calls: 3 rounds of 4; simulator and judge 6 calls: 2 rounds; chain 2 x 2 + 1 = 5
    assert shape.calls_by_role() == {"target": 12, "simulator": 6, "judge": 6}
    assert shape.calls() == 24
    assert shape.waves() == 3
    assert shape.ideal_s(0.5) == 5 * 0.5
    assert shape.ideal_s(0) == 0
