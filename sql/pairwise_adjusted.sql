-- pairwise_adjusted_sql: the Holm adjustment of dialogue.pairwise_comparisons, recomputed from its p_value column.
-- The family is every pair of targets on one pool and one metric: with m p-values in a family, the i-th smallest
-- is multiplied by (m - i + 1), the adjusted value is the running maximum of those products, capped at 1, and a
-- pair is significant_adjusted when it is below 0.05 (a pair without a p-value is left out of the family and
-- is not significant). (The p-values themselves come from the bootstrap standard
-- error, which only the asset computes.)
-- Usage: .read sql/pairwise_adjusted.sql; FROM pairwise_adjusted_sql;
CREATE OR REPLACE TEMP VIEW pairwise_adjusted_sql AS
WITH ranked AS (
    SELECT pool, metric, target_a, target_b, p_value,
           row_number() OVER (PARTITION BY pool, metric ORDER BY p_value) AS i,
           count(*) OVER (PARTITION BY pool, metric) AS m
    FROM dialogue.pairwise_comparisons
    WHERE p_value IS NOT NULL
), stepped AS (
    SELECT *, max((m - i + 1) * p_value) OVER (
        PARTITION BY pool, metric ORDER BY p_value, i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS running
    FROM ranked
)
SELECT c.pool, c.metric, c.target_a, c.target_b, least(s.running, 1.0) AS p_adjusted,
       coalesce(least(s.running, 1.0) < 0.05, false) AS significant_adjusted
FROM dialogue.pairwise_comparisons c
LEFT JOIN stepped s USING (pool, metric, target_a, target_b)
ORDER BY ALL;
