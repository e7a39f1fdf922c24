"""The embedded SpeechEQ text generator covers every subscale and valence and obeys the tone rules."""

import pytest

from eyt_dagster.speech_eq.templates import make_dialogue, make_scenario, select_tones, tone_options
from eyt_dagster.speech_eq.tones import rejection_reason
from eyt_dagster.speech_eq.vocabulary import SUBSCALES, VALENCES

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("slug", sorted(SUBSCALES))
def test_every_subscale_and_valence_yields_a_valid_item(slug):
    for valence in VALENCES:
        scenario = make_scenario(slug, valence, 0, seed=7)
        assert scenario == make_scenario(slug, valence, 0, seed=7)  # deterministic under the seed
        lines = make_dialogue(scenario, seed=7)
        assert [line.turn for line in lines] == [1, 2, 3, 4, 5, 6]
        options = tone_options(scenario)
        assert sorted(options) == [1, 2, 3, 4, 5, 6] and all(len(options[t]) == 3 for t in (4, 6))
        for turn_options in options.values():
            for _, instruction in turn_options:
                assert rejection_reason(instruction) is None, instruction


def test_tone_judge_prefers_an_active_wrong_emotion_over_a_flat_one():
    options = [("resonant", "r"), ("dissonant:apathetic wall", "flat"), ("dissonant:anxious spiraler", "shaky")]
    resonant, dissonant, why = select_tones(options)
    assert (resonant, dissonant) == (0, 2) and "flat" in why
    assert select_tones([("dissonant:apathetic wall", "f"), ("resonant", "r")])[:2] == (1, 0)
