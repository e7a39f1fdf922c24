-- alpha_sensitivity_sql: paper Table 8 from the raw verdicts. For each alpha in the sweep, the weighted
-- score (Eq. 3-4: weights at each dialogue's own T, T = 2 -> 0.5 / 0.5, renormalised over the judged turns),
-- the unweighted score, early (turns 1-2) and late (turns 3+) raw means and their difference, all on 0-100.
-- Twin of the `alpha_sensitivity` asset (its rank_flip column is computed in Python).
-- Needs sql/turn_dimensions.sql. Usage: .read sql/turn_dimensions.sql; .read sql/alpha_sensitivity.sql;
-- FROM alpha_sensitivity_sql;
CREATE OR REPLACE TEMP VIEW alpha_sensitivity_sql AS
WITH long AS (
    SELECT * FROM (UNPIVOT turn_dimensions ON empathy, persona, anthropomorphic INTO NAME dimension VALUE score)
    JOIN dialogue_lengths USING (target, pool, seed_id)
),
alphas AS (SELECT unnest([0.05, 0.10, 0.15]) AS alpha),
per_dialogue AS (
    SELECT target, pool, dimension, alpha, seed_id,
           sum(score * warmup_weight(turn, n_turns, alpha)) / sum(warmup_weight(turn, n_turns, alpha)) AS weighted,
           sum(score) AS total, count(*) AS turns,
           avg(score) FILTER (turn <= 2) AS early, avg(score) FILTER (turn > 2) AS late
    FROM long, alphas GROUP BY ALL
)
SELECT target, pool, dimension, alpha,
       avg(weighted) * 20 AS weighted, sum(total) / sum(turns) * 20 AS unweighted,
       avg(early) * 20 AS early, avg(late) * 20 AS late, (avg(early) - avg(late)) * 20 AS warmup_delta
FROM per_dialogue GROUP BY ALL ORDER BY ALL;
