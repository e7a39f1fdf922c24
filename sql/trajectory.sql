-- trajectory_sql: paper Table 13: per target and pool, the mean over dialogues of intent drift (Eq. 1),
-- directional alignment (Spearman of turn index vs similarity to the final intent), FICR, satisfaction
-- (0-100) and the number of turns. Twin of the `trajectory` asset.
-- Needs sql/turn_dimensions.sql and sql/dialogue_scores.sql (read them first).
CREATE OR REPLACE TEMP VIEW trajectory_sql AS
SELECT target, pool, count(*) AS n_dialogues, avg(drift) AS drift, avg(directional_alignment) AS directional_alignment,
       avg(completed::DOUBLE) AS ficr, avg(satisfaction) AS satisfaction, avg(n_turns) AS mean_turns
FROM dialogue_scores_sql GROUP BY target, pool ORDER BY target, pool;
