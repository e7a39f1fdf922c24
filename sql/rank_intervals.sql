-- rank_intervals_sql: each target's mean per-dialogue value per pool and metric on the ChatSEEDs every target of the
-- pool played, and its rank (1 = best; drift lowest first; ties share the best rank of the tie). The rank's
-- bootstrap interval is in the asset only. Per-dialogue values: sql/per_dialogue.sql.
-- Usage: .read sql/per_dialogue.sql; .read sql/rank_intervals.sql; FROM rank_intervals_sql;
CREATE OR REPLACE TEMP VIEW rank_intervals_sql AS
WITH per_dialogue AS (
    SELECT * FROM per_dialogue_values WHERE value IS NOT NULL
), pool_targets AS (
    SELECT pool, count(DISTINCT target) AS n_targets FROM dialogue.dialogue_scores GROUP BY pool
), shared AS (
    SELECT s.pool, s.seed_id FROM dialogue.dialogue_scores s JOIN pool_targets t USING (pool)
    GROUP BY s.pool, s.seed_id, t.n_targets HAVING count(DISTINCT s.target) = t.n_targets
), means AS (
    SELECT p.pool, p.metric, p.target, count(p.value) AS n_dialogues, avg(p.value) AS value
    FROM per_dialogue p JOIN shared USING (pool, seed_id) GROUP BY ALL
)
SELECT m.pool, m.metric, m.target, m.n_dialogues, t.n_targets, m.value,
       rank() OVER (PARTITION BY m.pool, m.metric
                    ORDER BY CASE WHEN m.metric = 'drift' THEN m.value ELSE -m.value END NULLS LAST) AS rank
FROM means m JOIN pool_targets t USING (pool)
ORDER BY ALL;
