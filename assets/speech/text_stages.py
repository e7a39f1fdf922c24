"""SpeechEQ text stages (paper §2.2-2.3): scenarios, six-turn dialogues, tone instructions, tone selection.
Each is partitioned by subscale. The embedded template generator is a baseline and is named in every row."""


import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, table_output
from eyt_dagster.speech.eq import BLAND_WORDS
from eyt_dagster.speech.partitions import subscale_partitions
from eyt_dagster.speech.records import Scenario
from eyt_dagster.speech.templates import GENERATOR_NAME, make_dialogue, make_scenario, select_tones, tone_options
from eyt_dagster.speech.tones import rejection_reason
from resources.models import BenchmarkResource

LOGIC_VERSION = "1"
_SPEECH = dict(key_prefix=["speech"], group_name="speech", partitions_def=subscale_partitions,
               metadata={"partition_expr": "subscale"}, code_version=LOGIC_VERSION)


def _ins(*names: str) -> dict[str, AssetIn]:
    return {name: AssetIn(key=["speech", name]) for name in names}


def _scenarios(frame: pd.DataFrame) -> dict[str, Scenario]:
    return {row.scenario_id: Scenario.model_validate_json(row.scenario_json) for row in frame.itertuples()}


@asset(**_SPEECH)
def scenarios(context: AssetExecutionContext, eyt: BenchmarkResource) -> Output[pd.DataFrame]:
    """Scenarios for one subscale: `items_per_valence` per valence, with two dissonant personas each."""
    settings, slug = eyt.slate.speech, context.partition_key
    rows = []
    for valence in settings.valences:
        for index in range(settings.items_per_valence):
            scenario = make_scenario(slug, valence, index, eyt.slate.seed)
            rows.append({"scenario_id": f"{slug}-{valence.lower()}-{index:03d}", "subscale": slug, "valence": valence,
                         "scenario_type": scenario.scenario_type, "title": scenario.title,
                         "scenario_json": scenario.model_dump_json(), "generator": GENERATOR_NAME})
    df = pd.DataFrame(rows)
    df["created_at"] = now_utc()
    return table_output(df, generator=f"{GENERATOR_NAME} (embedded baseline, not a language model)")


@asset(**_SPEECH, ins=_ins("scenarios"))
def dialogues(eyt: BenchmarkResource, scenarios: pd.DataFrame) -> Output[pd.DataFrame]:
    """Six turns per scenario; the test subject's turns 4 and 6 read plausibly in either tone."""
    rows = [
        {"scenario_id": sid, "subscale": sc.subscale, "turn": line.turn, "speaker": line.speaker, "text": line.text,
         "generator": GENERATOR_NAME}
        for sid, sc in _scenarios(scenarios).items() for line in make_dialogue(sc, eyt.slate.seed)
    ]
    df = pd.DataFrame(rows)
    df["created_at"] = now_utc()
    return table_output(df)


@asset(**_SPEECH, ins=_ins("scenarios"))
def tone_instructions(eyt: BenchmarkResource, scenarios: pd.DataFrame) -> Output[pd.DataFrame]:
    """One vocal instruction per context turn and three for turns 4 and 6; every attempt is a row, and an
    attempt using a bland word (or outside 8-15 words) is rejected with its reason."""
    bland = tuple(eyt.slate.speech.bland_words or BLAND_WORDS)
    rows = []
    for sid, sc in _scenarios(scenarios).items():
        for turn, options in tone_options(sc).items():
            for index, (kind, instruction) in enumerate(options):
                reason = rejection_reason(instruction, bland)
                rows.append({"scenario_id": sid, "subscale": sc.subscale, "turn": turn, "option_index": index,
                             "persona_kind": kind, "attempt": 1, "instruction": instruction,
                             "accepted": reason is None, "rejection_reason": reason, "generator": GENERATOR_NAME})
    df = pd.DataFrame(rows)
    df["created_at"] = now_utc()
    return table_output(df, rejected=int((~df["accepted"]).sum()))


@asset(**_SPEECH, ins=_ins("tone_instructions"))
def tone_selection(tone_instructions: pd.DataFrame) -> Output[pd.DataFrame]:
    """For turns 4 and 6, the resonant option and the most dissonant one (an actively wrong emotion is
    preferred over a flat delivery), with the judge's reasoning."""
    accepted = tone_instructions[tone_instructions["accepted"] & tone_instructions["turn"].isin([4, 6])]
    rows = []
    for (sid, turn), group in accepted.groupby(["scenario_id", "turn"]):
        ordered = group.sort_values("option_index")
        options = list(zip(ordered["persona_kind"], ordered["instruction"]))
        resonant, dissonant, why = select_tones(options)
        rows.append({"scenario_id": sid, "subscale": ordered["subscale"].iloc[0], "turn": turn,
                     "resonant_instruction": options[resonant][1], "dissonant_instruction": options[dissonant][1],
                     "dissonant_persona": options[dissonant][0].split(":", 1)[1], "reasoning": why,
                     "judge": f"{GENERATOR_NAME} rule"})
    df = pd.DataFrame(rows)
    df["created_at"] = now_utc()
    return table_output(df)


__all__ = ["dialogues", "scenarios", "tone_instructions", "tone_selection"]
