-- asr_errors_sql: a cascaded voice target's recognition error rate per pool on the user's answered turns of finished
-- dialogues (errors summed over turns, then divided by the reference length): the word error rate (wer), or the
-- character error rate (cer) of a pool whose errors are counted in characters (Chinese: error_unit); and each
-- label's accuracy on the turns heard without an error (clean) and with one (misheard): the errors split between
-- recognition and model.
-- Usage: .read sql/asr_errors.sql; FROM asr_errors_sql;
CREATE OR REPLACE TEMP VIEW asr_errors_sql AS
WITH heard AS (
    SELECT *, word_errors > 0 AS misheard, coalesce(error_unit, 'word') AS unit FROM voice.voiced_turns
    WHERE turn > 0 AND error IS NULL AND coalesce(complete, true) AND word_errors IS NOT NULL
)
SELECT target, pool, count(*) AS turns, sum(ref_words) AS ref_words, sum(word_errors) AS word_errors,
       any_value(unit) AS error_unit,
       CASE WHEN any_value(unit) = 'word' THEN sum(word_errors) / nullif(sum(ref_words), 0) END AS wer,
       CASE WHEN any_value(unit) = 'character' THEN sum(word_errors) / nullif(sum(ref_words), 0) END AS cer,
       count(*) FILTER (WHERE NOT misheard) AS turns_clean, count(*) FILTER (WHERE misheard) AS turns_misheard,
       avg((gold_explicit_intent = pred_explicit_intent)::DOUBLE) FILTER (WHERE NOT misheard) AS explicit_intent_acc_clean,
       avg((gold_explicit_intent = pred_explicit_intent)::DOUBLE) FILTER (WHERE misheard) AS explicit_intent_acc_misheard,
       avg((gold_latent_intent = pred_latent_intent)::DOUBLE) FILTER (WHERE NOT misheard) AS latent_intent_acc_clean,
       avg((gold_latent_intent = pred_latent_intent)::DOUBLE) FILTER (WHERE misheard) AS latent_intent_acc_misheard,
       avg((gold_emotion = pred_emotion)::DOUBLE) FILTER (WHERE NOT misheard) AS emotion_acc_clean,
       avg((gold_emotion = pred_emotion)::DOUBLE) FILTER (WHERE misheard) AS emotion_acc_misheard
FROM heard GROUP BY ALL;
