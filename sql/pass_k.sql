-- pass_k_sql: per cell, pass^k of final-intent completion for k = 1..R: over the ChatSEEDs with all R plays
-- judged, the mean of C(c, k) / C(R, k), c the plays that completed (a play completes when a majority of its
-- judge repeats say so; a tie does not). R is the variable `repeats` when set, else the largest repeat + 1.
-- Usage: .read sql/pass_k.sql; FROM pass_k_sql;
CREATE OR REPLACE TEMP VIEW pass_k_sql AS
WITH samples AS (
    SELECT target, pool, seed_id, 0::BIGINT AS repeat, 0::BIGINT AS judge_repeat, completed
    FROM dialogue.dialogue_scores
    UNION ALL
    SELECT target, pool, seed_id, repeat, judge_repeat, completed FROM dialogue.repeat_scores
), cells AS (
    SELECT target, pool, coalesce(getvariable('repeats'), max(repeat) + 1)::BIGINT AS R FROM samples GROUP BY ALL
), plays AS (
    SELECT s.target, s.pool, s.seed_id, s.repeat, c.R,
           sum(s.completed::INT) * 2 > count(*) AS completed
    FROM samples s JOIN cells c USING (target, pool)
    WHERE s.completed IS NOT NULL AND s.repeat < c.R
      AND s.judge_repeat < coalesce(getvariable('judge_repeats'), s.judge_repeat + 1)
    GROUP BY ALL
), per_seed AS (
    SELECT target, pool, seed_id, any_value(R) AS R, sum(completed::INT)::INTEGER AS c FROM plays
    GROUP BY ALL HAVING count(*) = any_value(R)
), ks AS (
    SELECT target, pool, R::INTEGER AS R, unnest(range(1, R + 1))::INTEGER AS k FROM cells
)
SELECT ks.target, ks.pool, ks.k, ks.R AS repeats, count(p.seed_id) AS n_seeds,
       avg(CASE WHEN p.c >= ks.k
                THEN factorial(p.c)::DOUBLE * factorial(ks.R - ks.k) / (factorial(ks.R) * factorial(p.c - ks.k))
                ELSE 0 END) AS pass_k
FROM ks LEFT JOIN per_seed p USING (target, pool)
GROUP BY ALL;
