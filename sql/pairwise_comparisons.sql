-- pairwise_comparisons_sql: for each pool and pair of targets, the mean per-dialogue value of each side on
-- the ChatSEEDs both played, and the difference (a - b). Per-dialogue values come from dialogue_scores
-- (a ratio metric is that dialogue's own ratio). The bootstrap intervals are in the asset only.
-- Usage: .read sql/pairwise_comparisons.sql; FROM pairwise_comparisons_sql;
CREATE OR REPLACE TEMP VIEW pairwise_comparisons_sql AS
WITH per_dialogue AS (
    SELECT target, pool, seed_id, metric, value FROM (UNPIVOT (
        SELECT target, pool, seed_id,
               explicit_correct / n_turns AS explicit_acc, latent_correct / n_turns AS latent_acc,
               emotion_correct / n_turns AS emotion_acc, drift, completed::DOUBLE AS ficr, satisfaction,
               empathy, persona, anthropomorphic
        FROM dialogue.dialogue_scores
    ) ON explicit_acc, latent_acc, emotion_acc, drift, ficr, satisfaction, empathy, persona, anthropomorphic
      INTO NAME metric VALUE value)
)
SELECT a.pool, a.metric, a.target AS target_a, b.target AS target_b, count(*) AS n_paired,
       avg(a.value) AS mean_a, avg(b.value) AS mean_b, avg(a.value - b.value) AS diff
FROM per_dialogue a JOIN per_dialogue b
  ON a.pool = b.pool AND a.seed_id = b.seed_id AND a.metric = b.metric AND a.target < b.target
GROUP BY ALL ORDER BY ALL;
