-- voice_gap_sql: the spoken EYT-Bench's text-to-voice gap per target, pool and paired metric, on the ChatSEEDs a
-- voice target played both ways with a value in both: n_paired, the text and voice means, delta = mean(voice - text)
-- and preserve_ratio = voice / text. The bootstrap interval is in the asset only (docs/spoken-eyt.md).
-- Usage: .read sql/per_dialogue.sql; .read sql/voice_gap.sql; FROM voice_gap_sql;
CREATE OR REPLACE TEMP VIEW voice_gap_sql AS
WITH values AS (
    SELECT * FROM (
        SELECT target, pool, seed_id, mode, explicit_acc, latent_acc, emotion_acc, drift, ficr, satisfaction,
               empathy, persona, anthropomorphic
        FROM paired_metric_values('voice.dialogue_scores')
    ) UNPIVOT (value FOR metric IN (
        explicit_acc, latent_acc, emotion_acc, drift, ficr, satisfaction, empathy, persona, anthropomorphic))
), paired AS (
    SELECT v.target, v.pool, v.metric, v.seed_id, v.value AS voice, t.value AS text
    FROM values v JOIN values t USING (target, pool, metric, seed_id)
    WHERE v.mode = 'voice' AND t.mode = 'text'
)
SELECT target, pool, metric, count(*) AS n_paired, avg(text) AS text, avg(voice) AS voice,
       avg(voice - text) AS delta, CASE WHEN avg(text) <> 0 THEN avg(voice) / avg(text) END AS preserve_ratio
FROM paired GROUP BY ALL;
