"""What an embedded baseline's numbers are, worded once for every report, table note and footnote.

The embedded baselines are the rule-based roles shipped with the two benchmarks (EYT-Bench's reflective and
terse targets, SpeechEQ's random and acoustic choosers; SpeechEQ's chance rows are read the same way): they show
the pipeline and its metrics working end to end, and their numbers say nothing about any language model. No
project imports, so that any module can use it.
"""

NOT_EVALUATIONS = "not evaluations of a language model"
# the end of a sentence about baseline rows: "is_baseline rows are ...: <REFERENCE_POINTS>."
REFERENCE_POINTS = f"reference points, {NOT_EVALUATIONS}"
# the same said of one baseline (the paper tables' dagger footnote)
REFERENCE_POINT = "a reference point, not an evaluation of a language model"
