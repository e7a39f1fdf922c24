-- noise_floor_sql: per cell and paired metric, the variance of the per-dialogue values split into between
-- ChatSEEDs, within a ChatSEED (the target's sampling over repeats) and the judge's sampling (over judge repeats),
-- by the ANOVA mean squares of the nested design on the ChatSEEDs with every sample (docs/eyt-metrics.md, "The
-- noise floor"). A component the slate did not sample is NULL. R and Q are the variables `repeats` and
-- `judge_repeats` when set (SET VARIABLE repeats = 3), else the largest repeat index present + 1.
-- Usage: .read sql/per_dialogue.sql; .read sql/noise_floor.sql; FROM noise_floor_sql;
CREATE OR REPLACE TEMP VIEW noise_floor_sql AS
WITH cells AS (
    SELECT target, pool, metric,
           coalesce(getvariable('repeats'), max(repeat) + 1)::BIGINT AS R,
           coalesce(getvariable('judge_repeats'), max(judge_repeat) + 1)::BIGINT AS Q
    FROM per_sample_values GROUP BY ALL
), kept AS (
    SELECT v.*, c.R, c.Q FROM per_sample_values v JOIN cells c USING (target, pool, metric)
    WHERE v.repeat < c.R AND v.judge_repeat < c.Q AND v.value IS NOT NULL
), balanced AS (
    SELECT target, pool, metric, seed_id FROM kept
    GROUP BY ALL HAVING count(DISTINCT (repeat, judge_repeat)) = any_value(R * Q)
), y AS (
    SELECT k.* FROM kept k JOIN balanced USING (target, pool, metric, seed_id)
), sr AS (
    SELECT target, pool, metric, seed_id, repeat, avg(value) AS ybar_sr FROM y GROUP BY ALL
), s AS (
    SELECT target, pool, metric, seed_id, avg(ybar_sr) AS ybar_s, stddev_samp(ybar_sr) AS sd_over_repeats
    FROM sr GROUP BY ALL
), judge_ss AS (
    SELECT target, pool, metric, sum((y.value - sr.ybar_sr) ^ 2) AS ss_judge
    FROM y JOIN sr USING (target, pool, metric, seed_id, repeat) GROUP BY ALL
), repeat_ss AS (
    SELECT target, pool, metric, sum((sr.ybar_sr - s.ybar_s) ^ 2) AS ss_repeat
    FROM sr JOIN s USING (target, pool, metric, seed_id) GROUP BY ALL
), seed_stats AS (
    SELECT target, pool, metric, count(*) AS S, avg(ybar_s) AS mean, var_samp(ybar_s) AS var_seed,
           avg(sd_over_repeats) AS spread
    FROM s GROUP BY ALL
), ms AS (
    SELECT c.target, c.pool, c.metric, c.R, c.Q, coalesce(t.S, 0) AS S, t.mean, t.spread,
           CASE WHEN c.Q > 1 THEN j.ss_judge / (t.S * c.R * (c.Q - 1)) END AS ms_judge,
           CASE WHEN c.R > 1 THEN c.Q * r.ss_repeat / (t.S * (c.R - 1)) END AS ms_repeat,
           c.R * c.Q * t.var_seed AS ms_seed
    FROM cells c LEFT JOIN seed_stats t USING (target, pool, metric)
    LEFT JOIN judge_ss j USING (target, pool, metric) LEFT JOIN repeat_ss r USING (target, pool, metric)
), comp AS (
    SELECT *, ms_judge AS v_judge,
           CASE WHEN R > 1 AND S > 0 THEN greatest(0, (ms_repeat - coalesce(ms_judge, 0)) / Q) END AS v_within,
           CASE WHEN ms_seed IS NOT NULL
                THEN greatest(0, (ms_seed - coalesce(ms_repeat, ms_judge, 0)) / (R * Q)) END AS v_between
    FROM ms
), total AS (
    SELECT *, coalesce(v_between, 0) + coalesce(v_within, 0) + coalesce(v_judge, 0) AS v_total FROM comp
)
SELECT target, pool, metric, R AS repeats, Q AS judge_repeats, S AS n_seeds, mean,
       sqrt(v_between) AS sd_between, sqrt(v_within) AS sd_within, sqrt(v_judge) AS sd_judge,
       CASE WHEN v_total > 0 THEN v_between / v_total END AS share_between,
       CASE WHEN v_total > 0 THEN v_within / v_total END AS share_within,
       CASE WHEN v_total > 0 THEN v_judge / v_total END AS share_judge,
       CASE WHEN R > 1 THEN spread END AS spread,
       CASE WHEN S > 0 AND (v_within IS NOT NULL OR v_judge IS NOT NULL)
            THEN sqrt((coalesce(v_within, 0) + coalesce(v_judge, 0)) / S) END AS rerun_sd
FROM total;
