-- simulator_audit_effect_sql: per pool, metric and target, the mean per-dialogue value over all finished dialogues
-- and over those the simulator audit did not flag, and the target's rank on each (1 = best; drift lowest first;
-- ties share the best rank). Per-dialogue values: sql/per_dialogue.sql; a dialogue's flag from
-- dialogue.simulator_audit (a dialogue it has no row of counts as not flagged).
-- Usage: .read sql/per_dialogue.sql; .read sql/simulator_audit_effect.sql; FROM simulator_audit_effect_sql;
CREATE OR REPLACE TEMP VIEW simulator_audit_effect_sql AS
WITH flags AS (
    SELECT target, pool, seed_id, bool_or(flagged) AS flagged FROM dialogue.simulator_audit GROUP BY ALL
), per_dialogue AS (  -- a NULL value stays a row: the dialogue counts, its value does not
    SELECT v.*, coalesce(f.flagged, false) AS flagged
    FROM per_dialogue_values v LEFT JOIN flags f USING (target, pool, seed_id)
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
