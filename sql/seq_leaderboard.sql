-- seq_leaderboard_sql: SpeechEQ accuracies and SEQ per target and persona condition, from speech.slm_choices
-- alone. Twin of n_items, acc1, acc2, acc_traj and seq in speech.seq_leaderboard (paper §2.5): headline rows
-- are the seeded option order under sequential inference; an item whose trajectory holds a failed call is
-- left out; SEQ = clip(100 + 15 z, 40, 160) with z = (acc_traj - median) / (1.4826 MAD) over the targets of
-- the same condition (MAD = 0 gives 100). Chance rows and the bootstrap intervals live in the asset only.
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
), cohort AS (
    SELECT condition, median(acc_traj) AS med FROM accuracy GROUP BY ALL
), spread AS (
    SELECT a.condition, any_value(c.med) AS med, median(abs(a.acc_traj - c.med)) AS mad
    FROM accuracy a JOIN cohort c USING (condition) GROUP BY ALL
)
SELECT a.target, a.condition, a.n_items, a.acc1, a.acc2, a.acc_traj,
       CASE WHEN s.mad = 0 THEN 100.0
            ELSE greatest(40.0, least(160.0, 100 + 15 * (a.acc_traj - s.med) / (1.4826 * s.mad))) END AS seq
FROM accuracy a JOIN spread s USING (condition)
ORDER BY a.condition, seq DESC, a.target;
