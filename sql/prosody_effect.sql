-- prosody_effect_sql: per voice target and pool, the emotion accuracy with the turn's tone and in the plain voice
-- on the same probed turns (voice.prosody_probe rows without an error), and their difference. The interval is in
-- the asset only.
-- Usage: .read sql/prosody_effect.sql; FROM prosody_effect_sql;
CREATE OR REPLACE TEMP VIEW prosody_effect_sql AS
SELECT target, pool, count(*) AS n_turns,
       avg((pred_emotion_toned = gold_emotion)::DOUBLE) AS acc_toned,
       avg((pred_emotion_plain = gold_emotion)::DOUBLE) AS acc_plain,
       avg((pred_emotion_toned = gold_emotion)::DOUBLE) - avg((pred_emotion_plain = gold_emotion)::DOUBLE) AS delta
FROM voice.prosody_probe WHERE error IS NULL
GROUP BY ALL;
