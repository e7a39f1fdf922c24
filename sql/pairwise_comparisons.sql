-- pairwise_comparisons_sql: for each pool and pair of targets, the mean per-dialogue value of each side on
-- the ChatSEEDs both played, and the difference (a - b), on per_dialogue_values (sql/per_dialogue.sql). The bootstrap intervals are in the asset only.
-- Usage: .read sql/per_dialogue.sql; .read sql/pairwise_comparisons.sql; FROM pairwise_comparisons_sql;
CREATE OR REPLACE TEMP VIEW pairwise_comparisons_sql AS
WITH per_dialogue AS (SELECT * FROM per_dialogue_values WHERE value IS NOT NULL)
SELECT a.pool, a.metric, a.target AS target_a, b.target AS target_b, count(*) AS n_paired,
       avg(a.value) AS mean_a, avg(b.value) AS mean_b, avg(a.value - b.value) AS diff
FROM per_dialogue a JOIN per_dialogue b
  ON a.pool = b.pool AND a.seed_id = b.seed_id AND a.metric = b.metric AND a.target < b.target
GROUP BY ALL ORDER BY ALL;
