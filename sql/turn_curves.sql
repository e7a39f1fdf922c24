-- turn_curves_sql: mean judge score (0-100) per target, pool, dimension and turn index, judges averaged
-- per turn first. Twin of the `turn_curves` asset. Needs sql/turn_dimensions.sql.
-- Usage: .read sql/turn_dimensions.sql; .read sql/turn_curves.sql; FROM turn_curves_sql;
CREATE OR REPLACE TEMP VIEW turn_curves_sql AS
SELECT target, pool, dimension, turn, avg(score) * 20 AS mean_score, count(*) AS n
FROM (UNPIVOT turn_dimensions ON empathy, persona, anthropomorphic INTO NAME dimension VALUE score)
GROUP BY ALL ORDER BY ALL;
