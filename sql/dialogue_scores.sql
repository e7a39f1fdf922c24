-- dialogue_scores_sql: one row per finished dialogue with every per-dialogue metric, from the raw rows.
-- Twin of the `dialogue_scores` asset (alpha 0.10, the slate default: edit `params` to change it).
-- Needs sql/turn_dimensions.sql. Usage: .read sql/turn_dimensions.sql; .read sql/dialogue_scores.sql;
-- FROM dialogue_scores_sql;
CREATE OR REPLACE TEMP VIEW dialogue_scores_sql AS
WITH params AS (SELECT 0.10 AS alpha),
turns AS (SELECT * FROM dialogue.dialogue_turns WHERE error IS NULL AND turn > 0),
labels AS (
    SELECT target, pool, seed_id, max(turn) AS n_turns,
           sum((gold_explicit_intent = pred_explicit_intent)::INT) AS explicit_correct,
           sum((gold_latent_intent = pred_latent_intent)::INT) AS latent_correct,
           sum((gold_emotion = pred_emotion)::INT) AS emotion_correct
    FROM turns GROUP BY ALL
),
ranked AS (  -- average ranks of the similarity to the final intent, for Spearman's rho
    SELECT *, rank() OVER (PARTITION BY target, pool, seed_id ORDER BY cos_pred_final)
                + (count(*) OVER (PARTITION BY target, pool, seed_id, cos_pred_final) - 1) / 2.0 AS sim_rank
    FROM dialogue.intent_similarity
),
trajectory AS (
    SELECT target, pool, seed_id, avg(1 - cos_gold_pred) AS drift,
           CASE WHEN count(*) >= 3 AND count(DISTINCT sim_rank) > 1 THEN corr(turn, sim_rank) END AS directional_alignment
    FROM ranked GROUP BY ALL
),
finals AS (  -- judges combined: majority vote (a tie is not completed), mean satisfaction on 0-100
    SELECT target, pool, seed_id, 2 * sum(completed::INT) > count(*) AS completed,
           (avg(satisfaction) - 1) * 25 AS satisfaction
    FROM dialogue.final_intent_verdicts WHERE error IS NULL GROUP BY ALL
),
weighted AS (
    SELECT d.*, CASE WHEN n = 1 THEN 1.0 WHEN n = 2 THEN 0.5
                     WHEN turn <= 2 THEN alpha ELSE (1 - 2 * alpha) / (n - 2) END AS w
    FROM (SELECT *, count(*) OVER (PARTITION BY target, pool, seed_id) AS n FROM turn_dimensions) d, params
),
dims AS (
    SELECT target, pool, seed_id,
           sum(w * empathy) * 20 AS empathy, sum(w * persona) * 20 AS persona,
           sum(w * anthropomorphic) * 20 AS anthropomorphic,
           sum(empathy) AS empathy_sum, sum(persona) AS persona_sum, sum(anthropomorphic) AS anthropomorphic_sum,
           avg(empathy) FILTER (turn <= 2) AS empathy_early, avg(empathy) FILTER (turn > 2) AS empathy_late,
           avg(persona) FILTER (turn <= 2) AS persona_early, avg(persona) FILTER (turn > 2) AS persona_late,
           avg(anthropomorphic) FILTER (turn <= 2) AS anthropomorphic_early,
           avg(anthropomorphic) FILTER (turn > 2) AS anthropomorphic_late,
           count(*) AS n_judged_turns
    FROM weighted GROUP BY ALL
)
SELECT * FROM labels
LEFT JOIN trajectory USING (target, pool, seed_id)
LEFT JOIN finals USING (target, pool, seed_id)
LEFT JOIN dims USING (target, pool, seed_id)
ORDER BY target, pool, seed_id;
