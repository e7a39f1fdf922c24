-- dialogue_scores_sql: one row per finished dialogue with every per-dialogue metric, from the raw rows.
-- Twin of the `dialogue_scores` asset. Needs sql/turn_dimensions.sql (its settings: alpha, judge_combine).
-- Usage: .read sql/turn_dimensions.sql; .read sql/dialogue_scores.sql; FROM dialogue_scores_sql;
CREATE OR REPLACE TEMP VIEW dialogue_scores_sql AS
WITH labels AS (
    SELECT target, pool, seed_id, max(turn) AS n_turns,
           sum((gold_explicit_intent = pred_explicit_intent)::INT) AS explicit_correct,
           sum((gold_latent_intent = pred_latent_intent)::INT) AS latent_correct,
           sum((gold_emotion = pred_emotion)::INT) AS emotion_correct
    FROM finished_turns GROUP BY ALL
),
ranked AS (  -- average ranks of the similarity to the final intent, for Spearman's rho
    SELECT *, rank() OVER (PARTITION BY target, pool, seed_id ORDER BY cos_pred_final)
                + (count(*) OVER (PARTITION BY target, pool, seed_id, cos_pred_final) - 1) / 2.0 AS sim_rank
    FROM dialogue.intent_similarity
),
trajectory AS (
    SELECT target, pool, seed_id, avg(drift_scale_of(embedding_model) * (1 - cos_gold_pred)) AS drift,
           CASE WHEN count(*) >= 3 AND count(DISTINCT sim_rank) > 1 THEN corr(turn, sim_rank) END AS directional_alignment
    FROM ranked GROUP BY ALL
),
finals AS (  -- judges combined: majority vote (a tie is not completed), satisfaction on 0-100
    SELECT target, pool, seed_id, 2 * sum(completed::INT) > count(*) AS completed,
           (judges_combined(satisfaction) - 1) * 25 AS satisfaction
    FROM dialogue.final_intent_verdicts WHERE error IS NULL GROUP BY ALL
),
weighted AS (  -- Eq. 4 weight of each judged turn at its dialogue's own T
    SELECT d.*, warmup_weight(d.turn, l.n_turns, eyt_alpha()) AS w
    FROM turn_dimensions d JOIN dialogue_lengths l USING (target, pool, seed_id)
),
dims AS (  -- Eq. 3 with the weights renormalised over the judged turns (sum(w * s) / sum(w))
    SELECT target, pool, seed_id,
           sum(w * empathy) / sum(w) * 20 AS empathy, sum(w * persona) / sum(w) * 20 AS persona,
           sum(w * anthropomorphic) / sum(w) * 20 AS anthropomorphic,
           sum(empathy) AS empathy_sum, sum(persona) AS persona_sum, sum(anthropomorphic) AS anthropomorphic_sum,
           avg(empathy) FILTER (turn <= 2) AS empathy_early, avg(empathy) FILTER (turn > 2) AS empathy_late,
           avg(persona) FILTER (turn <= 2) AS persona_early, avg(persona) FILTER (turn > 2) AS persona_late,
           avg(anthropomorphic) FILTER (turn <= 2) AS anthropomorphic_early,
           avg(anthropomorphic) FILTER (turn > 2) AS anthropomorphic_late,
           count(*) AS n_judged_turns
    FROM weighted GROUP BY ALL
),
failed AS (  -- failed judge calls (error rows) per dialogue
    SELECT target, pool, seed_id, count(*) AS n_failed_verdicts
    FROM dialogue.judge_verdicts WHERE error IS NOT NULL GROUP BY ALL
),
failed_finals AS (
    SELECT target, pool, seed_id, count(*) AS n_failed_final_verdicts
    FROM dialogue.final_intent_verdicts WHERE error IS NOT NULL GROUP BY ALL
)
SELECT * EXCLUDE (n_judged_turns, n_failed_verdicts, n_failed_final_verdicts),
       coalesce(n_judged_turns, 0) AS n_judged_turns, coalesce(n_failed_verdicts, 0) AS n_failed_verdicts,
       coalesce(n_failed_final_verdicts, 0) AS n_failed_final_verdicts
FROM labels
LEFT JOIN trajectory USING (target, pool, seed_id)
LEFT JOIN finals USING (target, pool, seed_id)
LEFT JOIN dims USING (target, pool, seed_id)
LEFT JOIN failed USING (target, pool, seed_id)
LEFT JOIN failed_finals USING (target, pool, seed_id)
ORDER BY target, pool, seed_id;
