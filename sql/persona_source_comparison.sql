-- persona_source_comparison_sql: paper Table 5 from the leaderboard: each family's mean per pool for the
-- headline metrics and the shift (personamem_v2 - nemotron_usa). Usage: .read ...; FROM persona_source_comparison_sql;
CREATE OR REPLACE TEMP VIEW persona_source_comparison_sql AS
WITH long AS (
    SELECT family, pool, metric, value FROM (UNPIVOT dialogue.leaderboard
        ON explicit_acc, latent_acc, emotion_acc, emotion_macro_f1, drift, ficr, satisfaction, empathy, persona,
           anthropomorphic, empathy_unweighted, persona_unweighted, anthropomorphic_unweighted, mean_turns
        INTO NAME metric VALUE value)
)
SELECT family, metric, avg(value) FILTER (pool = 'nemotron_usa') AS nemotron_usa,
       avg(value) FILTER (pool = 'personamem_v2') AS personamem_v2,
       avg(value) FILTER (pool = 'personamem_v2') - avg(value) FILTER (pool = 'nemotron_usa') AS shift
FROM long GROUP BY ALL ORDER BY ALL;
