-- per_dialogue_values: one row per finished dialogue and paired metric, the value that dialogue has (a ratio metric
-- is the dialogue's own ratio; a missing value stays a row with value NULL). The pairwise comparisons, the rank
-- intervals and the simulator audit's effect compare targets on these values.
-- Usage: .read sql/per_dialogue.sql; FROM per_dialogue_values;
CREATE OR REPLACE TEMP VIEW per_dialogue_values AS
WITH wide AS (
    SELECT target, pool, seed_id,
           explicit_correct / n_turns AS explicit_acc, latent_correct / n_turns AS latent_acc,
           emotion_correct / n_turns AS emotion_acc, drift, completed::DOUBLE AS ficr, satisfaction,
           empathy, persona, anthropomorphic
    FROM dialogue.dialogue_scores
)
SELECT * FROM wide UNPIVOT INCLUDE NULLS (value FOR metric IN (
    explicit_acc, latent_acc, emotion_acc, drift, ficr, satisfaction, empathy, persona, anthropomorphic));
