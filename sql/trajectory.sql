-- trajectory_sql: paper Table 13 from the raw rows: intent drift (Eq. 1, per dialogue then averaged),
-- directional alignment (per dialogue, Spearman = Pearson correlation of average ranks of turn index and
-- cos(predicted intent, final intent); undefined below three turns or for a constant similarity), FICR
-- (majority of judges, a tie is not completed), satisfaction 0-100 and mean turns.
-- Twin of the `trajectory` asset. Usage: .read sql/trajectory.sql; FROM trajectory_sql;
CREATE OR REPLACE TEMP VIEW trajectory_sql AS
WITH ranked AS (
    SELECT target, pool, seed_id, turn, cos_gold_pred,
           rank() OVER (PARTITION BY target, pool, seed_id ORDER BY cos_pred_final)
             + (count(*) OVER (PARTITION BY target, pool, seed_id, cos_pred_final) - 1) / 2.0 AS sim_rank
    FROM dialogue.intent_similarity
),
per_dialogue AS (
    SELECT target, pool, seed_id, avg(1 - cos_gold_pred) AS drift,
           CASE WHEN count(*) >= 3 AND count(DISTINCT sim_rank) > 1 THEN corr(turn, sim_rank) END AS alignment
    FROM ranked GROUP BY ALL
),
finals AS (
    SELECT target, pool, seed_id, (2 * sum(completed::INT) > count(*))::DOUBLE AS completed,
           (avg(satisfaction) - 1) * 25 AS satisfaction
    FROM dialogue.final_intent_verdicts WHERE error IS NULL GROUP BY ALL
),
lengths AS (
    SELECT target, pool, seed_id, max(turn) AS n_turns FROM dialogue.dialogue_turns
    WHERE error IS NULL AND turn > 0 GROUP BY ALL
)
SELECT l.target, l.pool, count(*) AS n_dialogues, avg(d.drift) AS drift, avg(d.alignment) AS directional_alignment,
       avg(f.completed) AS ficr, avg(f.satisfaction) AS satisfaction, avg(l.n_turns) AS mean_turns
FROM lengths l LEFT JOIN per_dialogue d USING (target, pool, seed_id) LEFT JOIN finals f USING (target, pool, seed_id)
GROUP BY ALL ORDER BY ALL;
