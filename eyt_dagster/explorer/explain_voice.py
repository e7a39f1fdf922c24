"""The arithmetic beside the spoken EYT-Bench's numbers (/voice and /voice/dialogue/..), as explain.py gives it for
the text benchmark's: each explanation is computed by the function whose value the voice tables store, from the
rows the stored number was made of: eyt_voice.gap's `explained_gap` (voice.voice_gap, from voice.dialogue_scores)
and `explained_error_rate` (voice.asr_errors, from voice.voiced_turns), prosody_probe's `explained_prosody`
(voice.prosody_effect, from voice.prosody_probe), and a voiced dialogue's judged numbers as explain.judged gives a
text dialogue's (voice.dialogue_scores, from voice.judge_verdicts and voice.final_intent_verdicts).

Not explained: a voiced dialogue's drift (the intent similarities it is the mean of are computed by the scoring
step and not stored in the voice schema), and a turn's word-error count (an edit distance: the page shows the text
and the transcript it compares)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from eyt_dagster.explorer.explain import Shown, judged, shown
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.explorer.voice import VoicedDialogue, VoiceReport
from eyt_dagster.eyt_voice import gap, prosody_probe
from eyt_dagster.eyt_voice.table_contracts import MODES

CELL = ["target", "pool"]
# A voiced dialogue's numbers with their arithmetic, per mode (the page's keys are "<mode>_<number>").
DIALOGUE_NUMBERS = ("completed", "satisfaction", "empathy", "persona", "anthropomorphic")
_PROBE = "target, pool, seed_id, turn, gold_emotion, pred_emotion_toned, pred_emotion_plain, error"


def report(wh: Warehouse, found: VoiceReport) -> dict[str, Shown]:
    """The report's numbers, keyed 'gap|<target>|<pool>|<metric>|<text, voice, delta or preserve_ratio>',
    'asr|<target>|<pool>' (the WER or CER) and 'prosody|<target>|<pool>|<acc_toned, acc_plain or delta>'; a delta
    followed by how its stored interval was drawn."""
    out: dict[str, Shown] = {}
    if found.gap:
        with wh.sql(["voice.dialogue_scores"]) as con:
            scores = con.execute("SELECT * FROM dialogue_scores ORDER BY target, pool, seed_id, mode").df()
        cells = _cells(scores)
        for row in found.gap:
            cell = cells.get((str(row["target"]), str(row["pool"])))
            if cell is None:
                continue
            metric = str(row["metric"])
            explained = gap.explained_gap(*gap.paired_values(cell, metric), metric)
            explained["delta"] = explained["delta"].then(
                *gap.gap_interval(int(row["n_paired"] or 0), _float(row["ci_low"]), _float(row["ci_high"]))
            )
            for name in gap.GAP_NUMBERS:
                out[f"gap|{row['target']}|{row['pool']}|{metric}|{name}"] = shown(explained[name], row.get(name))
    if found.asr:
        with wh.sql(["voice.voiced_turns"]) as con:
            turns = con.execute("SELECT * FROM voiced_turns").df()
        heard = _cells(gap.heard_turns(turns))
        for row in found.asr:
            cell = heard.get((str(row["target"]), str(row["pool"])))
            if cell is not None:
                rate = gap.explained_error_rate(cell)
                stored = row.get("cer") if row.get("error_unit") == "character" else row.get("wer")
                out[f"asr|{row['target']}|{row['pool']}"] = shown(rate, stored)
    if found.prosody:
        with wh.sql(["voice.prosody_probe"]) as con:
            probe = con.execute(f"SELECT {_PROBE} FROM prosody_probe ORDER BY target, pool, seed_id, turn").df()
        probed = _cells(prosody_probe.answered_probes(probe))
        for row in found.prosody:
            cell = probed.get((str(row["target"]), str(row["pool"])))
            if cell is None:
                continue
            effect = prosody_probe.explained_prosody(cell)
            effect["delta"] = effect["delta"].then(
                *prosody_probe.prosody_interval(len(cell), _float(row["ci_low"]), _float(row["ci_high"]))
            )
            for name in prosody_probe.PROSODY_NUMBERS:
                out[f"prosody|{row['target']}|{row['pool']}|{name}"] = shown(effect[name], row.get(name))
    return out


def dialogue(wh: Warehouse, d: VoicedDialogue) -> dict[str, Shown]:
    """A voiced dialogue's completed, satisfaction and dimension scores in each mode, keyed '<mode>_<number>', from
    that mode's verdicts (explain.judged, at the mode's own length: its dialogue_scores n_turns)."""
    key = {"target": d.target, "seed_id": d.seed_id}
    tables = ("voice.judge_verdicts", "voice.final_intent_verdicts")
    with wh.sql(tables, {"target": [d.target]}) as con:
        verdicts = _records(con, "judge_verdicts", key)
        finals = _records(con, "final_intent_verdicts", key)
    out: dict[str, Shown] = {}
    for mode in MODES:
        scores = d.scores.get(mode)
        if scores is None or pd.isna(scores.get("n_turns")):
            continue
        mine = judged(
            scores,
            [f for f in finals if f.get("mode") == mode],
            [v for v in verdicts if v.get("mode") == mode],
            int(scores["n_turns"]),
        )
        out |= {f"{mode}_{name}": value for name, value in mine.items()}
    return out


def _records(con: Any, table: str, key: dict[str, str]) -> list[dict[str, Any]]:
    sql = f"SELECT * FROM {table} WHERE target = $target AND seed_id = $seed_id ORDER BY mode, judge"
    if table == "judge_verdicts":
        sql += ", turn"
    records: list[dict[str, Any]] = con.execute(sql, key).df().to_dict("records")
    return records


def _cells(frame: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    if frame.empty:
        return {}
    return {(str(t), str(p)): cell for (t, p), cell in frame.groupby(CELL, sort=False)}


def _float(value: Any) -> float:
    return float("nan") if value is None or pd.isna(value) else float(value)
