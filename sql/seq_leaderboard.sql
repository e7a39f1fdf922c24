-- seq_leaderboard_sql: SpeechEQ accuracies and SEQ per target and persona condition, from speech.slm_choices
-- alone. Twin of n_items, acc1, acc2, acc_traj, seq, in_seq_cohort and seq_cohort_kind in speech.seq_leaderboard
-- (paper §2.5): headline rows are the seeded option order under sequential inference; an item whose trajectory
-- holds a failed call is left out; SEQ = clip(100 + 15 z, 40, 160) with z = (acc_traj - median) / (1.4826 MAD)
-- over the condition's cohort (MAD = 0 gives 100). The cohort is the evaluated models (not baselines, speech_input
-- 'audio' or 'cascaded-*'); without one, the embedded baselines but the shortcut rules (calmer-chooser and
-- livelier-chooser never read the scene). Every other target is placed on the cohort's
-- scale without joining it. A slate that names its cohort (speech.evaluation.seq_cohort) is not visible here:
-- then compare with the table's own in_seq_cohort. Chance rows and the bootstrap intervals live in the asset
-- only. See docs/speecheq-evaluation.md.
-- Usage: .read sql/seq_leaderboard.sql; FROM seq_leaderboard_sql;
CREATE OR REPLACE TEMP VIEW seq_leaderboard_sql AS
WITH headline AS (
    SELECT * FROM speech.slm_choices WHERE "order" = 'seeded' AND inference = 'sequential'
), items AS (
    SELECT target, condition, item_id,
           bool_or(round = 1 AND correct) AS r1, bool_or(round = 2 AND correct) AS r2,
           count(DISTINCT round) = 2 AND bool_and(error IS NULL AND correct IS NOT NULL) AS clean
    FROM headline GROUP BY ALL
), accuracy AS (
    SELECT target, condition, count(*) AS n_items, avg(r1::INT) AS acc1, avg(r2::INT) AS acc2,
           avg((r1 AND r2)::INT) AS acc_traj
    FROM items WHERE clean GROUP BY ALL
), kinds AS (
    SELECT target, condition,
           bool_or(is_baseline AND model NOT IN ('calmer-chooser', 'livelier-chooser')) AS is_cohort_baseline,
           bool_or(NOT is_baseline AND (speech_input = 'audio' OR speech_input LIKE 'cascaded%')) AS is_model
    FROM headline GROUP BY ALL
), scored AS (
    SELECT a.*,
           CASE WHEN bool_or(k.is_model) OVER w THEN k.is_model ELSE k.is_cohort_baseline END AS in_seq_cohort,
           CASE WHEN bool_or(k.is_model) OVER w THEN 'models'
                WHEN bool_or(k.is_cohort_baseline) OVER w THEN 'baselines_only' ELSE 'none' END AS seq_cohort_kind
    FROM accuracy a JOIN kinds k USING (target, condition)
    WINDOW w AS (PARTITION BY a.condition)
), cohort AS (
    SELECT condition, median(acc_traj) AS med FROM scored WHERE in_seq_cohort GROUP BY ALL
), spread AS (
    SELECT s.condition, any_value(c.med) AS med, median(abs(s.acc_traj - c.med)) AS mad
    FROM scored s JOIN cohort c USING (condition) WHERE s.in_seq_cohort GROUP BY ALL
)
SELECT s.target, s.condition, s.n_items, s.acc1, s.acc2, s.acc_traj, s.in_seq_cohort, s.seq_cohort_kind,
       CASE WHEN p.med IS NULL THEN NULL
            WHEN p.mad = 0 THEN 100.0
            ELSE greatest(40.0, least(160.0, 100 + 15 * (s.acc_traj - p.med) / (1.4826 * p.mad))) END AS seq
FROM scored s LEFT JOIN spread p USING (condition)
ORDER BY s.condition, seq DESC, s.target;
