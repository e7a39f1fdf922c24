-- turn_curves_sql: mean judge score (0-100) per target, pool, dimension and turn index, judges averaged
-- per turn first. Twin of the `turn_curves` asset. Usage: .read sql/turn_curves.sql; FROM turn_curves_sql;
CREATE OR REPLACE TEMP VIEW turn_curves_sql AS
WITH turn_dims AS (
    SELECT target, pool, seed_id, turn,
           avg(empathy_recognition + empathy_attribution + empathy_resonance + empathy_response + empathy_support) AS empathy,
           avg(persona_style + persona_value + persona_culture + persona_memory + persona_security) AS persona,
           avg(anthro_colloquial + anthro_emotional + anthro_flow + anthro_flexibility + anthro_rhythm) AS anthropomorphic
    FROM dialogue.judge_verdicts WHERE error IS NULL GROUP BY ALL
)
SELECT target, pool, dimension, turn, avg(score) * 20 AS mean_score, count(*) AS n
FROM (UNPIVOT turn_dims ON empathy, persona, anthropomorphic INTO NAME dimension VALUE score)
GROUP BY ALL ORDER BY ALL;
