-- simulator_audit_effect_sql: per pool, metric and target, the mean per-dialogue value over all finished dialogues
-- and over those the simulator audit did not flag, and the target's rank on each (1 = best; drift lowest first;
-- ties share the best rank). Per-dialogue values as in pairwise_comparisons.sql; a dialogue's flag from
-- dialogue.simulator_audit (a dialogue it has no row of counts as not flagged).
-- Usage: .read sql/simulator_audit_effect.sql; FROM simulator_audit_effect_sql;
CREATE OR REPLACE TEMP VIEW simulator_audit_effect_sql AS
WITH flags AS (
    SELECT target, pool, seed_id, bool_or(flagged) AS flagged FROM dialogue.simulator_audit GROUP BY ALL
), scored AS (
    SELECT s.*, coalesce(f.flagged, false) AS flagged
    FROM dialogue.dialogue_scores s LEFT JOIN flags f USING (target, pool, seed_id)
), wide AS (
    SELECT target, pool, seed_id, flagged,
           explicit_correct / n_turns AS explicit_acc, latent_correct / n_turns AS latent_acc,
           emotion_correct / n_turns AS emotion_acc, drift, completed::DOUBLE AS ficr, satisfaction,
           empathy, persona, anthropomorphic
    FROM scored
), per_dialogue AS (  -- a NULL value stays a row: the dialogue counts, its value does not
    SELECT * FROM wide UNPIVOT INCLUDE NULLS (value FOR metric IN (
        explicit_acc, latent_acc, emotion_acc, drift, ficr, satisfaction, empathy, persona, anthropomorphic))
), cells AS (
    SELECT pool, metric, target, count(*) AS n_dialogues, count(*) FILTER (WHERE flagged) AS n_flagged,
           avg(value) AS value_all, avg(value) FILTER (WHERE NOT flagged) AS value_unflagged
    FROM per_dialogue GROUP BY ALL
)
SELECT pool, metric, target, n_dialogues, n_flagged, n_flagged / n_dialogues AS flag_rate, value_all,
       value_unflagged,
       rank() OVER (PARTITION BY pool, metric
                    ORDER BY CASE WHEN metric = 'drift' THEN value_all ELSE -value_all END NULLS LAST) AS rank_all,
       rank() OVER (PARTITION BY pool, metric
                    ORDER BY CASE WHEN metric = 'drift' THEN value_unflagged ELSE -value_unflagged END NULLS LAST)
           AS rank_unflagged
FROM cells ORDER BY ALL;
