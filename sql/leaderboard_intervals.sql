-- leaderboard_intervals_sql: the point values of `leaderboard_intervals` (long format, one row per target,
-- pool and metric), from leaderboard_sql and trajectory_sql. The 95% bootstrap bounds are drawn in Python
-- (seeded) and have no SQL twin. Read sql/turn_dimensions.sql, sql/dialogue_scores.sql, sql/leaderboard.sql
-- and sql/trajectory.sql first.
CREATE OR REPLACE TEMP VIEW leaderboard_intervals_sql AS
WITH cells AS (
    SELECT l.*, t.directional_alignment FROM leaderboard_sql l JOIN trajectory_sql t USING (target, pool)
)
SELECT target, pool, metric, value
FROM cells UNPIVOT INCLUDE NULLS (value FOR metric IN (
    explicit_acc, latent_acc, emotion_acc, emotion_macro_f1, drift, directional_alignment, ficr, satisfaction,
    empathy, persona, anthropomorphic, empathy_unweighted, persona_unweighted, anthropomorphic_unweighted, mean_turns))
ORDER BY target, pool, metric;
