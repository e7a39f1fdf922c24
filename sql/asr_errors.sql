-- asr_errors_sql: a cascaded voice target's word error rate per pool on the user's answered turns of finished
-- dialogues (errors summed over turns, then divided by the reference words).
-- Usage: .read sql/asr_errors.sql; FROM asr_errors_sql;
CREATE OR REPLACE TEMP VIEW asr_errors_sql AS
SELECT target, pool, count(*) AS turns, sum(ref_words) AS ref_words, sum(word_errors) AS word_errors,
       sum(word_errors) / nullif(sum(ref_words), 0) AS wer
FROM voice.voiced_turns
WHERE turn > 0 AND error IS NULL AND coalesce(complete, true) AND word_errors IS NOT NULL
GROUP BY ALL;
