-- per_sample_values: one row per sample of a finished dialogue and paired metric, the value that sample has (a
-- ratio metric is the dialogue's own ratio; a missing value stays a row with value NULL). A sample is one play
-- (`repeat`) judged once (`judge_repeat`): dialogue_scores is sample (0, 0), repeat_scores the others (the slate's
-- repeats and judge_repeats). The noise floor and pass^k read every sample.
-- per_dialogue_values: sample (0, 0) only, the values the pairwise comparisons, the rank intervals and the
-- simulator audit's effect compare targets on.
-- Usage: .read sql/per_dialogue.sql; FROM per_dialogue_values;
-- paired_metric_values(table): a dialogue_scores-shaped table's rows with the nine paired metrics' per-dialogue
-- values (explicit_acc ... anthropomorphic), one place for their formulas (the spoken EYT-Bench's twins read it too).
CREATE OR REPLACE TEMP MACRO paired_metric_values(tbl) AS TABLE
    SELECT *, explicit_correct / n_turns AS explicit_acc, latent_correct / n_turns AS latent_acc,
           emotion_correct / n_turns AS emotion_acc, completed::DOUBLE AS ficr
    FROM query_table(tbl);

CREATE OR REPLACE TEMP VIEW per_sample_values AS
WITH scores AS (
    SELECT *, 0 AS repeat, 0 AS judge_repeat FROM paired_metric_values('dialogue.dialogue_scores')
    UNION ALL BY NAME
    SELECT * FROM paired_metric_values('dialogue.repeat_scores')
), wide AS (
    SELECT target, pool, seed_id, repeat::BIGINT AS repeat, judge_repeat::BIGINT AS judge_repeat,
           explicit_acc, latent_acc, emotion_acc, drift, ficr, satisfaction, empathy, persona, anthropomorphic
    FROM scores
)
SELECT * FROM wide UNPIVOT INCLUDE NULLS (value FOR metric IN (
    explicit_acc, latent_acc, emotion_acc, drift, ficr, satisfaction, empathy, persona, anthropomorphic));

CREATE OR REPLACE TEMP VIEW per_dialogue_values AS
SELECT * EXCLUDE (repeat, judge_repeat) FROM per_sample_values WHERE repeat = 0 AND judge_repeat = 0;
