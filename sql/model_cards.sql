-- model_cards_sql: the point values of reports.model_cards (one row per model id over both benchmarks), from
-- the twins of the two leaderboards: each pool's EYT-Bench headline metrics from leaderboard_sql, the pooled
-- ones recomputed over all the target's finished dialogues (accuracies and macro-F1 over turns, the other
-- metrics as means over dialogues, as the leaderboard aggregates a pool), and SpeechEQ's default-condition
-- n_items, Acc1, Acc2, Acc_traj and SEQ from seq_leaderboard_sql. A benchmark a model did not run gives NULLs.
-- Intervals, costs, fingerprints and prompt hashes live in the asset only. See docs/reports.md.
-- Read sql/turn_dimensions.sql, sql/dialogue_scores.sql, sql/leaderboard.sql and sql/seq_leaderboard.sql first.
-- Usage: .read sql/model_cards.sql; FROM model_cards_sql;
CREATE OR REPLACE TEMP VIEW model_cards_sql AS
WITH per_pool AS (
    SELECT target,
           max(explicit_acc) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_explicit_acc,
           max(latent_acc) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_latent_acc,
           max(emotion_acc) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_emotion_acc,
           max(emotion_macro_f1) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_emotion_macro_f1,
           max(drift) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_drift,
           max(ficr) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_ficr,
           max(satisfaction) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_satisfaction,
           max(empathy) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_empathy,
           max(persona) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_persona,
           max(anthropomorphic) FILTER (WHERE pool = 'nemotron_usa') AS eyt_nemotron_usa_anthropomorphic,
           max(explicit_acc) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_explicit_acc,
           max(latent_acc) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_latent_acc,
           max(emotion_acc) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_emotion_acc,
           max(emotion_macro_f1) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_emotion_macro_f1,
           max(drift) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_drift,
           max(ficr) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_ficr,
           max(satisfaction) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_satisfaction,
           max(empathy) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_empathy,
           max(persona) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_persona,
           max(anthropomorphic) FILTER (WHERE pool = 'personamem_v2') AS eyt_personamem_v2_anthropomorphic
    FROM leaderboard_sql GROUP BY target
), pooled_scores AS (
    SELECT target, count(*) AS n_dialogues,
           sum(explicit_correct) / sum(n_turns) AS explicit_acc, sum(latent_correct) / sum(n_turns) AS latent_acc,
           sum(emotion_correct) / sum(n_turns) AS emotion_acc, avg(drift) AS drift, avg(completed::DOUBLE) AS ficr,
           avg(satisfaction) AS satisfaction, avg(empathy) AS empathy, avg(persona) AS persona,
           avg(anthropomorphic) AS anthropomorphic
    FROM dialogue_scores_sql GROUP BY target
), emotion_classes AS (
    SELECT DISTINCT target, gold_emotion AS label FROM finished_turns
    UNION SELECT DISTINCT target, pred_emotion FROM finished_turns
), pooled_f1 AS (  -- macro-F1 over the labels in gold or predictions, every pool's turns together
    SELECT target, avg(CASE WHEN 2 * tp + fp + fn = 0 THEN 0 ELSE 2 * tp / (2 * tp + fp + fn) END) AS emotion_macro_f1
    FROM (
        SELECT c.target, c.label,
               sum((t.gold_emotion = c.label AND t.pred_emotion = c.label)::DOUBLE) AS tp,
               sum((t.gold_emotion <> c.label AND t.pred_emotion = c.label)::DOUBLE) AS fp,
               sum((t.gold_emotion = c.label AND t.pred_emotion <> c.label)::DOUBLE) AS fn
        FROM emotion_classes c JOIN finished_turns t USING (target)
        GROUP BY ALL
    ) GROUP BY target
), speech AS (
    SELECT target, acc1, acc2, acc_traj, seq, n_items FROM seq_leaderboard_sql WHERE condition = 'default'
), ids AS (
    SELECT target FROM per_pool UNION SELECT target FROM pooled_scores UNION SELECT target FROM speech
)
SELECT i.target,
       s.target IS NOT NULL AS has_eyt_bench, q.target IS NOT NULL AS has_speech_eq,
       p.* EXCLUDE (target),
       s.n_dialogues AS eyt_pooled_n_dialogues,
       s.explicit_acc AS eyt_pooled_explicit_acc,
       s.latent_acc AS eyt_pooled_latent_acc,
       s.emotion_acc AS eyt_pooled_emotion_acc,
       f.emotion_macro_f1 AS eyt_pooled_emotion_macro_f1,
       s.drift AS eyt_pooled_drift,
       s.ficr AS eyt_pooled_ficr,
       s.satisfaction AS eyt_pooled_satisfaction,
       s.empathy AS eyt_pooled_empathy,
       s.persona AS eyt_pooled_persona,
       s.anthropomorphic AS eyt_pooled_anthropomorphic,
       q.n_items AS speech_n_items, q.acc1 AS speech_acc1, q.acc2 AS speech_acc2, q.acc_traj AS speech_acc_traj,
       q.seq AS speech_seq
FROM ids i
LEFT JOIN per_pool p USING (target)
LEFT JOIN pooled_scores s USING (target)
LEFT JOIN pooled_f1 f USING (target)
LEFT JOIN speech q USING (target)
ORDER BY i.target;
