-- judge_corrected_sql: per target x pool and judge-made metric (empathy, persona, anthropomorphic, ficr,
-- satisfaction), the prediction-powered (PPI++) estimate of the people's mean from the human labels and the
-- judge's per-dialogue values, as dialogue.judge_corrected has it: n_dialogues, n_labelled, people_mean,
-- ppi_lambda, corrected_mean, corrected_se, corrected_low, corrected_high and shown.
-- The people's per-dialogue value is made as the judge's: the annotators' scores averaged per turn x field; a
-- dimension's turn scores weighted by Eq. 4 at eyt_alpha() over the turns a judge answered (renormalised), x 20;
-- a dialogue counts for a dimension only when every judged turn has a human score. completed (turn 0) is FICR's
-- 0-1 value; satisfaction (turn 0, 1-5) is (x - 1) x 25.
-- PPI++ (eyt_dagster/core/prediction_powered.py): with Y the people's values and J the judge's on the n labelled
-- dialogues and U the judge's on the N others, lambda = covar_pop(Y, J) / ((1 + n / N) x var_samp(J and U)),
-- clipped to [0, 1] (0 when N = 0 or the judge's variance is 0); estimate = mean(Y) + lambda x (mean(U) - mean(J));
-- se = sqrt(lambda^2 x var_pop(U) / N + var_pop(Y - lambda x J) / n); the interval is estimate -/+ 1.959964 se.
-- Fewer than 2 labelled dialogues: no estimate. shown: 'corrected' from eyt_min_human_labels() labelled dialogues
-- (the slate's min_human_labels, 10 by default: redefine the macro to match another slate).
-- Needs sql/turn_dimensions.sql. Usage: .read sql/turn_dimensions.sql; .read sql/judge_corrected.sql;
-- FROM judge_corrected_sql;
CREATE OR REPLACE TEMP MACRO eyt_min_human_labels() AS 10;
CREATE OR REPLACE TEMP VIEW judge_corrected_sql AS
WITH judge AS (
    SELECT target, pool, seed_id, metric, value AS judge
    FROM (SELECT target, pool, seed_id, empathy, persona, anthropomorphic, completed::DOUBLE AS ficr, satisfaction
          FROM dialogue.dialogue_scores)
    UNPIVOT INCLUDE NULLS (value FOR metric IN (empathy, persona, anthropomorphic, ficr, satisfaction))
),
human_turns AS (
    SELECT target, pool, seed_id, turn, dimension, avg(score) AS score
    FROM dialogue.human_annotations  -- labels from drawn sheets only: the CSV's were not drawn at random
    WHERE score IS NOT NULL AND NOT isnan(score) AND sheet IS NOT NULL GROUP BY ALL
),
judged AS (
    SELECT t.target, t.pool, t.seed_id, t.turn, warmup_weight(t.turn, s.n_turns, eyt_alpha()) AS w
    FROM turn_dimensions t JOIN dialogue.dialogue_scores s USING (target, pool, seed_id)
    WHERE (t.target, t.pool, t.seed_id) IN (SELECT target, pool, seed_id FROM human_turns)
),
dimensions AS (SELECT unnest(['empathy', 'persona', 'anthropomorphic']) AS metric),
human_dimensions AS (
    SELECT j.target, j.pool, j.seed_id, d.metric,
           CASE WHEN count(h.score) = count(*) THEN sum(j.w * h.score) / sum(j.w) * 20 END AS human
    FROM judged j CROSS JOIN dimensions d
    LEFT JOIN human_turns h
      ON h.target = j.target AND h.pool = j.pool AND h.seed_id = j.seed_id AND h.turn = j.turn
     AND h.dimension = d.metric
    GROUP BY ALL
),
human_final AS (
    SELECT target, pool, seed_id,
           CASE dimension WHEN 'completed' THEN 'ficr' ELSE 'satisfaction' END AS metric,
           CASE dimension WHEN 'completed' THEN score ELSE (score - 1) * 25 END AS human
    FROM human_turns WHERE turn = 0 AND dimension IN ('completed', 'satisfaction')
),
human AS (
    SELECT * FROM human_dimensions WHERE human IS NOT NULL
    UNION ALL SELECT * FROM human_final
),
pairs AS (
    SELECT j.target, j.pool, j.seed_id, j.metric, j.judge,
           CASE WHEN j.judge IS NOT NULL THEN h.human END AS human
    FROM judge j LEFT JOIN human h USING (target, pool, seed_id, metric)
),
moments AS (
    SELECT target, pool, metric,
           count(judge) AS n_dialogues,
           count(human) AS n,
           count(judge) - count(human) AS big_n,
           avg(human) AS people_mean,
           avg(judge) FILTER (human IS NOT NULL) AS judge_labelled,
           avg(judge) FILTER (human IS NULL) AS judge_unlabelled,
           stddev_pop(judge) FILTER (human IS NULL) AS judge_sd,
           covar_pop(human, judge) AS covariance,
           var_samp(judge) AS judge_variance
    FROM pairs GROUP BY ALL
),
tuned AS (
    SELECT *,
           CASE WHEN n < 2 THEN NULL
                WHEN big_n = 0 OR judge_variance = 0 THEN 0.0
                ELSE greatest(0.0, least(1.0, covariance / ((1 + n::DOUBLE / big_n) * judge_variance)))
           END AS ppi_lambda
    FROM moments
),
rectified AS (
    SELECT p.target, p.pool, p.metric, stddev_pop(p.human - t.ppi_lambda * p.judge) AS rectified_sd
    FROM pairs p JOIN tuned t USING (target, pool, metric)
    WHERE p.human IS NOT NULL AND t.ppi_lambda IS NOT NULL
    GROUP BY ALL
),
estimated AS (
    SELECT t.*,
           CASE WHEN n >= 2 THEN people_mean + CASE WHEN big_n > 0
                THEN ppi_lambda * (judge_unlabelled - judge_labelled) ELSE 0 END END AS corrected_mean,
           CASE WHEN n >= 2 THEN sqrt(CASE WHEN big_n > 0 THEN (ppi_lambda * judge_sd) ^ 2 / big_n ELSE 0 END
                + r.rectified_sd ^ 2 / n) END AS corrected_se
    FROM tuned t LEFT JOIN rectified r USING (target, pool, metric)
)
SELECT target, pool, metric, n_dialogues, n AS n_labelled, people_mean, ppi_lambda, corrected_mean, corrected_se,
       corrected_mean - 1.959963984540054 * corrected_se AS corrected_low,
       corrected_mean + 1.959963984540054 * corrected_se AS corrected_high,
       CASE WHEN n >= 2 AND n >= eyt_min_human_labels() THEN 'corrected' ELSE 'judge only' END AS shown
FROM estimated
ORDER BY pool, target, metric;
