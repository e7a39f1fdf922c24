-- leaderboard_sql: the EYT-Bench leaderboard recomputed from the raw rows.
-- It must equal the `leaderboard` asset (tests/test_pipeline.py checks it). A temporary view, so it works on a
-- read-only connection too: duckdb -readonly data/eyt.duckdb, then
--   .read sql/turn_dimensions.sql
--   .read sql/leaderboard.sql
--   SELECT * FROM leaderboard_sql;
-- alpha (the warm-up weight of turns 1 and 2, Eq. 4) and how judges combine are the settings in
-- sql/turn_dimensions.sql. Only finished dialogues count (finished_turns, dialogue_lengths); a cell none of whose
-- dialogues finished has a row with n_dialogues 0 and its metrics NULL.
CREATE OR REPLACE TEMP VIEW leaderboard_sql AS
WITH turns AS (SELECT * FROM finished_turns),
cells AS (SELECT DISTINCT target, pool FROM dialogue.dialogue_turns),
labels AS (
    SELECT target, pool, count(DISTINCT seed_id) AS n_dialogues,
           avg((gold_explicit_intent = pred_explicit_intent)::DOUBLE) AS explicit_acc,
           avg((gold_latent_intent = pred_latent_intent)::DOUBLE) AS latent_acc,
           avg((gold_emotion = pred_emotion)::DOUBLE) AS emotion_acc
    FROM cells LEFT JOIN turns USING (target, pool) GROUP BY target, pool
),
-- macro-F1 over the emotion labels that occur in gold or predictions
emotion_classes AS (
    SELECT DISTINCT target, pool, gold_emotion AS label FROM turns
    UNION SELECT DISTINCT target, pool, pred_emotion FROM turns
),
emotion_f1 AS (
    SELECT c.target, c.pool,
           avg(CASE WHEN 2 * tp + fp + fn = 0 THEN 0 ELSE 2 * tp / (2 * tp + fp + fn) END) AS emotion_macro_f1
    FROM (
        SELECT c.target, c.pool, c.label,
               sum((t.gold_emotion = c.label AND t.pred_emotion = c.label)::DOUBLE) AS tp,
               sum((t.gold_emotion <> c.label AND t.pred_emotion = c.label)::DOUBLE) AS fp,
               sum((t.gold_emotion = c.label AND t.pred_emotion <> c.label)::DOUBLE) AS fn
        FROM emotion_classes c JOIN turns t USING (target, pool)
        GROUP BY c.target, c.pool, c.label
    ) c GROUP BY c.target, c.pool
),
drift AS (  -- Eq. 1 per finished dialogue on its encoder's drift scale, then the mean over dialogues
    SELECT target, pool, avg(d) AS drift
    FROM (SELECT target, pool, seed_id, avg(drift_scale_of(embedding_model) * (1 - cos_gold_pred)) AS d
          FROM dialogue.intent_similarity JOIN dialogue_lengths USING (target, pool, seed_id) GROUP BY ALL)
    GROUP BY target, pool
),
finals AS (  -- judges combined: majority vote (a tie is not completed), satisfaction by judges_combined
    SELECT target, pool, avg((2 * votes > judges)::DOUBLE) AS ficr, avg((sat - 1) * 25) AS satisfaction
    FROM (SELECT target, pool, seed_id, sum(completed::INT) AS votes, count(*) AS judges,
                 judges_combined(satisfaction) AS sat
          FROM dialogue.final_intent_verdicts JOIN dialogue_lengths USING (target, pool, seed_id)
          WHERE error IS NULL GROUP BY ALL)
    GROUP BY target, pool
),
scored AS (  -- per judged turn of a finished dialogue, judges combined, dimensions on 0-5, with its T
    SELECT * FROM turn_dimensions JOIN dialogue_lengths USING (target, pool, seed_id)
),
weighted AS (  -- Eq. 3-4: weights at each dialogue's own length T, renormalised over its judged turns
    SELECT *, warmup_weight(turn, n_turns, eyt_alpha()) AS w FROM scored
),
subjective AS (
    SELECT target, pool,
           avg(we) * 20 AS empathy, avg(wp) * 20 AS persona, avg(wa) * 20 AS anthropomorphic
    FROM (SELECT target, pool, seed_id, sum(w * empathy) / sum(w) AS we, sum(w * persona) / sum(w) AS wp,
                 sum(w * anthropomorphic) / sum(w) AS wa
          FROM weighted GROUP BY ALL)
    GROUP BY target, pool
),
unweighted AS (
    SELECT target, pool, avg(empathy) * 20 AS empathy_unweighted, avg(persona) * 20 AS persona_unweighted,
           avg(anthropomorphic) * 20 AS anthropomorphic_unweighted
    FROM scored GROUP BY target, pool
),
lengths AS (
    SELECT target, pool, avg(t) AS mean_turns FROM (SELECT target, pool, seed_id, max(turn) AS t FROM turns GROUP BY ALL)
    GROUP BY target, pool
),
-- how the target's replies came to be: text replies cut at max_tokens over every answered turn, and the notes of what
-- its provider's profile or refusals changed (each once, sorted, ' | ' between them); a note of a sampling setting
-- sent with another value starts with the setting and a colon (eyt_dagster/core/provider_profiles.py)
replies AS (
    SELECT target, pool, sum(coalesce(target_cut_replies, 0))::BIGINT AS cut_replies
    FROM dialogue.dialogue_turns WHERE turn > 0 GROUP BY target, pool
),
notes AS (
    SELECT target, pool, string_agg(DISTINCT note, ' | ' ORDER BY note) AS adaptations,
           bool_or(contains(note, ':') AND split_part(note, ':', 1) IN ('temperature', 'top_p', 'reasoning_effort'))
               AS sampling_adapted
    FROM (SELECT target, pool, unnest(string_split(target_adaptations, ' | ')) AS note
          FROM dialogue.dialogue_turns WHERE turn > 0 AND target_adaptations IS NOT NULL)
    GROUP BY target, pool
),
-- language consistency: a dialogue with no determined text has no share and is skipped, as avg skips NULL
shares AS (
    SELECT target, pool, avg(reply_language_share) AS reply_language_share,
           avg(user_language_share) AS user_language_share
    FROM dialogue.language_consistency GROUP BY target, pool
)
SELECT l.target, l.pool, l.n_dialogues, l.explicit_acc, l.latent_acc, l.emotion_acc, f1.emotion_macro_f1,
       d.drift, fi.ficr, fi.satisfaction, s.empathy, s.persona, s.anthropomorphic,
       u.empathy_unweighted, u.persona_unweighted, u.anthropomorphic_unweighted, m.mean_turns,
       sh.reply_language_share, sh.user_language_share,
       coalesce(r.cut_replies, 0) AS cut_replies, n.adaptations, coalesce(n.sampling_adapted, false) AS sampling_adapted
FROM labels l
LEFT JOIN emotion_f1 f1 USING (target, pool)
LEFT JOIN drift d USING (target, pool)
LEFT JOIN finals fi USING (target, pool)
LEFT JOIN subjective s USING (target, pool)
LEFT JOIN unweighted u USING (target, pool)
LEFT JOIN lengths m USING (target, pool)
LEFT JOIN shares sh USING (target, pool)
LEFT JOIN replies r USING (target, pool)
LEFT JOIN notes n USING (target, pool)
ORDER BY l.pool, l.target;
