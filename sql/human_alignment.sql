-- human_alignment_sql: the part of paper Table 15 that SQL expresses directly: per dimension, the number
-- of turn-cells, Pearson r between the judges' score and the human mean, the bias (judge - human, 0-100),
-- the share within one rating point and the early/late lenience (0-100). The kappas, Spearman rho and
-- Krippendorff's alpha come from scipy / scikit-learn / krippendorff in the `human_alignment` asset.
-- Needs sql/turn_dimensions.sql. Usage: .read sql/turn_dimensions.sql; .read sql/human_alignment.sql;
-- FROM human_alignment_sql;
CREATE OR REPLACE TEMP VIEW human_alignment_sql AS
WITH judge AS (
    SELECT target, pool, seed_id, turn, dimension, score AS judge_score
    FROM (UNPIVOT turn_dimensions ON empathy, persona, anthropomorphic INTO NAME dimension VALUE score)
),
human AS (
    SELECT target, pool, seed_id, turn, dimension, avg(score) AS human_mean
    FROM dialogue.human_annotations WHERE score IS NOT NULL GROUP BY ALL
),
cells AS (SELECT * FROM judge JOIN human USING (target, pool, seed_id, turn, dimension)),
dimensions AS (SELECT unnest(['empathy', 'persona', 'anthropomorphic']) AS dimension)
SELECT dimension, count(judge_score) AS n_cells, corr(judge_score, human_mean) AS pearson_r,
       avg(judge_score - human_mean) * 20 AS bias_0_100,
       avg((abs(judge_score - human_mean) <= 1 + 1e-9)::DOUBLE) AS within_1,
       avg(judge_score - human_mean) FILTER (turn <= 2) * 20 AS lenience_early,
       avg(judge_score - human_mean) FILTER (turn > 2) * 20 AS lenience_late
FROM dimensions LEFT JOIN cells USING (dimension) GROUP BY dimension ORDER BY dimension;
