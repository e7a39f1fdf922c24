-- corrected_pairwise_sql: dialogue.corrected_pairwise recomputed from dialogue.judge_corrected and
-- dialogue.pairwise_comparisons. Only a pool and metric all of whose targets show a corrected figure get rows (a
-- pool's targets: every target judge_corrected names on the pool, on any metric, and every target the pairwise
-- table names on that pool and metric). A pair (a before b in id order) compares the corrected means: diff = a - b,
-- se = sqrt(se_a^2 + se_b^2) (the two estimates taken as independent: conservative, see docs/eyt-metrics.md), the
-- 95% interval diff +- 1.959964 se, a two-sided normal p-value, Holm-adjusted over every pair of one pool and
-- metric as in sql/pairwise_adjusted.sql, significant when the adjusted p < 0.05. The judge-only columns are the
-- pairwise table's; a verdict is a_better / b_better / no_clear_difference (drift: lower is better), and changed
-- says the two differ (never for a pair the pairwise table has no difference for).
-- DuckDB has no normal distribution function: eyt_normal_tail(x) is P(Z > x) for x >= 0 by Hart's (1968)
-- double-precision rational approximation (as G. West, 2005, writes it out), which agrees
-- with scipy.special.ndtr(-x) to 2e-16 absolute.
-- Usage: .read sql/corrected_pairwise.sql; FROM corrected_pairwise_sql;
CREATE OR REPLACE TEMP MACRO eyt_normal_tail(x) AS (
    CASE
        WHEN x > 37 THEN 0.0
        WHEN x < 7.07106781186547 THEN exp(-x * x / 2)
            * ((((((0.0352624965998911 * x + 0.700383064443688) * x + 6.37396220353165) * x + 33.912866078383) * x
                + 112.079291497871) * x + 221.213596169931) * x + 220.206867912376)
            / (((((((0.0883883476483184 * x + 1.75566716318264) * x + 16.064177579207) * x + 86.7807322029461) * x
                + 296.564248779674) * x + 637.333633378831) * x + 793.826512519948) * x + 440.413735824752)
        ELSE exp(-x * x / 2) / (x + 1 / (x + 2 / (x + 3 / (x + 4 / (x + 0.65))))) / 2.506628274631
    END
);

CREATE OR REPLACE TEMP MACRO eyt_verdict(diff, significant, metric) AS (
    CASE
        WHEN NOT coalesce(significant, false) OR diff IS NULL OR isnan(diff) OR diff = 0 THEN 'no_clear_difference'
        WHEN (diff > 0) != (metric = 'drift') THEN 'a_better'
        ELSE 'b_better'
    END
);

CREATE OR REPLACE TEMP VIEW corrected_pairwise_sql AS
WITH usable AS (
    SELECT pool, metric, target, corrected_mean AS mean, corrected_se AS se
    FROM dialogue.judge_corrected
    WHERE shown = 'corrected' AND coalesce(isfinite(corrected_mean) AND isfinite(corrected_se), false)
), grouped AS (
    SELECT DISTINCT pool, metric FROM dialogue.judge_corrected
), named AS (
    SELECT g.pool, g.metric, c.target
    FROM grouped g JOIN (SELECT DISTINCT pool, target FROM dialogue.judge_corrected) c USING (pool)
    UNION
    SELECT pool, metric, target_a FROM dialogue.pairwise_comparisons JOIN grouped USING (pool, metric)
    UNION
    SELECT pool, metric, target_b FROM dialogue.pairwise_comparisons JOIN grouped USING (pool, metric)
), complete AS (
    SELECT n.pool, n.metric
    FROM named n LEFT JOIN usable u USING (pool, metric, target)
    GROUP BY n.pool, n.metric
    HAVING bool_and(u.target IS NOT NULL)
), pairs AS (
    SELECT a.pool, a.metric, a.target AS target_a, b.target AS target_b,
           a.mean - b.mean AS corrected_diff, sqrt(a.se * a.se + b.se * b.se) AS corrected_se
    FROM usable a
    JOIN usable b ON a.pool = b.pool AND a.metric = b.metric AND a.target < b.target
    JOIN complete c ON c.pool = a.pool AND c.metric = a.metric
), tested AS (
    SELECT *,
           corrected_diff - 1.959963984540054 * corrected_se AS corrected_low,
           corrected_diff + 1.959963984540054 * corrected_se AS corrected_high,
           CASE
               WHEN corrected_se = 0 THEN CASE WHEN corrected_diff = 0 THEN 1.0 ELSE 0.0 END
               ELSE 2 * eyt_normal_tail(abs(corrected_diff) / corrected_se)
           END AS corrected_p
    FROM pairs
), ranked AS (
    SELECT *,
           row_number() OVER (PARTITION BY pool, metric ORDER BY corrected_p) AS i,
           count(*) OVER (PARTITION BY pool, metric) AS m
    FROM tested
), adjusted AS (
    SELECT *, least(max((m - i + 1) * corrected_p) OVER (
        PARTITION BY pool, metric ORDER BY corrected_p, i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ), 1.0) AS corrected_p_adjusted
    FROM ranked
), judged AS (
    SELECT a.*, p.diff AS judge_diff, p.ci_low AS judge_low, p.ci_high AS judge_high,
           coalesce(p.significant_adjusted, false) AS judge_significant,
           a.corrected_p_adjusted < 0.05 AS corrected_significant
    FROM adjusted a
    LEFT JOIN dialogue.pairwise_comparisons p USING (pool, metric, target_a, target_b)
)
SELECT pool, metric, target_a, target_b, judge_diff, judge_low, judge_high, judge_significant,
       eyt_verdict(judge_diff, judge_significant, metric) AS judge_verdict,
       corrected_diff, corrected_se, corrected_low, corrected_high, corrected_p, corrected_p_adjusted,
       corrected_significant,
       eyt_verdict(corrected_diff, corrected_significant, metric) AS corrected_verdict,
       coalesce(NOT isnan(judge_diff), false) AND eyt_verdict(judge_diff, judge_significant, metric)
           != eyt_verdict(corrected_diff, corrected_significant, metric) AS changed
FROM judged
ORDER BY ALL;
