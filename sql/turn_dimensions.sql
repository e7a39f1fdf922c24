-- turn_dimensions: per judged turn, each dimension's score on 0-5 (the sum of its five sub-indicators,
-- paper §3.5.3), the slate's judges averaged. The other views read it: `.read sql/turn_dimensions.sql` first.
CREATE OR REPLACE TEMP VIEW turn_dimensions AS
SELECT target, pool, seed_id, turn,
       avg(empathy_recognition + empathy_attribution + empathy_resonance + empathy_response + empathy_support) AS empathy,
       avg(persona_style + persona_value + persona_culture + persona_memory + persona_security) AS persona,
       avg(anthro_colloquial + anthro_emotional + anthro_flow + anthro_flexibility + anthro_rhythm) AS anthropomorphic
FROM dialogue.judge_verdicts WHERE error IS NULL
GROUP BY target, pool, seed_id, turn;
