-- cross_judge_ablation_sql: the 'score' rows of paper Table 9 / 14: on the dialogues the replacement judge
-- re-judged, the mean per-turn dimension score (0-100, averaged per dialogue then over dialogues) of the
-- primary judges (averaged: the twin assumes judge_combine 'mean') and of the replacement judge, the signed
-- mean difference `delta` (replacement - primary) and the mean absolute difference `mean_abs_delta` (the
-- paper's mean |Delta|), both over dialogues. Satisfaction and the Kendall tau / Spearman rho of the
-- rankings are in the asset. Usage: .read sql/cross_judge_ablation.sql; FROM cross_judge_ablation_sql;
CREATE OR REPLACE TEMP VIEW cross_judge_ablation_sql AS
WITH sample AS (SELECT DISTINCT target, pool, seed_id FROM dialogue.cross_judge_verdicts WHERE error IS NULL),
scored AS (
    SELECT 'primary' AS side, * FROM dialogue.judge_verdicts
    UNION ALL BY NAME SELECT 'replacement' AS side, * FROM dialogue.cross_judge_verdicts
),
turns AS (
    SELECT side, target, pool, seed_id, turn,
           avg(empathy_recognition + empathy_attribution + empathy_resonance + empathy_response + empathy_support) AS empathy,
           avg(persona_style + persona_value + persona_culture + persona_memory + persona_security) AS persona,
           avg(anthro_colloquial + anthro_emotional + anthro_flow + anthro_flexibility + anthro_rhythm) AS anthropomorphic
    FROM scored JOIN sample USING (target, pool, seed_id) WHERE error IS NULL GROUP BY ALL
),
per_dialogue AS (
    SELECT side, target, pool, seed_id, metric, avg(score) * 20 AS value
    FROM (UNPIVOT turns ON empathy, persona, anthropomorphic INTO NAME metric VALUE score) GROUP BY ALL
),
paired AS (  -- dialogues scored by both sides
    SELECT metric, p.value AS p, r.value AS r
    FROM per_dialogue p JOIN per_dialogue r USING (target, pool, seed_id, metric)
    WHERE p.side = 'primary' AND r.side = 'replacement'
)
SELECT metric, avg(p) AS "primary", avg(r) AS replacement, avg(r - p) AS delta, avg(abs(r - p)) AS mean_abs_delta
FROM paired GROUP BY metric ORDER BY metric;
