-- thinking_ablation_sql: paper Table 7 recomputed from the leaderboard for the reasoning pairs the
-- thinking_ablation table lists (the pairs themselves are declared in the slate).
-- Usage: .read sql/thinking_ablation.sql; FROM thinking_ablation_sql;
CREATE OR REPLACE TEMP VIEW thinking_ablation_sql AS
WITH pairs AS (SELECT DISTINCT pair, think_target, non_think_target FROM dialogue.thinking_ablation),
long AS (
    SELECT target, pool, metric, value FROM (UNPIVOT dialogue.leaderboard
        ON explicit_acc, latent_acc, emotion_acc, emotion_macro_f1, drift, ficr, satisfaction, empathy, persona,
           anthropomorphic, empathy_unweighted, persona_unweighted, anthropomorphic_unweighted, mean_turns
        INTO NAME metric VALUE value)
)
SELECT p.pair, p.think_target, p.non_think_target, t.pool, t.metric, t.value AS think, n.value AS non_think,
       t.value - n.value AS delta
FROM pairs p
JOIN long t ON t.target = p.think_target
JOIN long n ON n.target = p.non_think_target AND n.pool = t.pool AND n.metric = t.metric
ORDER BY ALL;
