-- judge_agreement_sql: for completion, how many dialogues several judges voted on and the share where the
-- vote was unanimous. Krippendorff's alpha (the rest of the `judge_agreement` asset) is computed with the
-- `krippendorff` package and has no SQL twin. Usage: .read sql/judge_agreement.sql; FROM judge_agreement_sql;
CREATE OR REPLACE TEMP VIEW judge_agreement_sql AS
SELECT 'completion' AS measure, count(*) AS n_units,
       CASE WHEN max(judges) > 1 THEN avg((votes = 0 OR votes = judges)::DOUBLE) END AS unanimous_share
FROM (SELECT target, pool, seed_id, sum(completed::INT) AS votes, count(*) AS judges
      FROM dialogue.final_intent_verdicts WHERE error IS NULL GROUP BY ALL);
