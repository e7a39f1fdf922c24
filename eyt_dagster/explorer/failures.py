"""The failure kinds the dialogue list filters by: each a boolean column of the cell's dialogue query
(queries._CELL_DIALOGUES), with the sentence the page shows for it."""

from __future__ import annotations

# A dialogue's intent drift counts as high at or above this quantile of its cell's drifts (drift: Eq. 1, the mean
# of 1 - cos(gold, predicted intent description) over its turns).
HIGH_DRIFT_QUANTILE = 0.75

FAILURES: dict[str, str] = {
    "not_completed": "final intent not completed (the judges' majority verdict)",
    "high_drift": "high intent drift (in the cell's top quarter)",
    "wrong_emotion": "wrong emotion on at least one turn",
    "error_rows": "error rows (the dialogue failed, or a judge call did)",
    "incomplete": "incomplete dialogue (a call failed before the dialogue ended)",
    "simulator_flagged": "flagged by the simulator audit (leak, role flip, repetition, empty turn, early end)",
}
