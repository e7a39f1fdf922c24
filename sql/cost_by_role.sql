-- cost_by_role_sql: calls, tokens, USD and latency per role and model, summed over the rows each role wrote:
-- the EYT-Bench user simulator and target (dialogue.dialogue_turns), the judges (dialogue.judge_verdicts and
-- dialogue.final_intent_verdicts) and the SpeechEQ targets (speech.slm_choices, round-1 copies shared between
-- inference modes counted once). Figures are each reply's own, so cache hits count at the price first paid;
-- the call ledger (data/cache/model_calls.sqlite, table `ledger`; table eyt.ledger of the Dagster instance's
-- database when the instance is on Postgres, docs/storage.md) tells what was really spent.
-- The spoken EYT-Bench adds its voice targets (voice.voiced_turns: audio input tokens are in their tokens_in as the
-- endpoint reports them) and two roles measured in audio seconds: `tts` (each distinct user clip once: the
-- seconds synthesised, whoever heard them) and `asr` (a cascade's recognised seconds, each distinct clip once per
-- cascade target; an audio target recognises nothing).
-- Usage: .read sql/cost_by_role.sql; FROM cost_by_role_sql;
CREATE OR REPLACE TEMP VIEW cost_by_role_sql AS
SELECT role, model, sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out, sum(cost_usd) AS cost_usd,
       sum(latency_s) AS latency_s, sum(audio_s) AS audio_s, count(*) AS rows
FROM (
    SELECT *, NULL::DOUBLE AS audio_s FROM (
    SELECT 'target' AS role, target AS model, target_tokens_in AS tokens_in, target_tokens_out AS tokens_out,
           target_cost_usd AS cost_usd, target_latency_s AS latency_s FROM dialogue.dialogue_turns WHERE turn > 0
    UNION ALL
    SELECT 'simulator', simulator, simulator_tokens_in, simulator_tokens_out, simulator_cost_usd, simulator_latency_s
    FROM dialogue.dialogue_turns WHERE turn > 0
    UNION ALL
    SELECT 'judge', judge, judge_tokens_in, judge_tokens_out, judge_cost_usd, judge_latency_s FROM dialogue.judge_verdicts
    UNION ALL
    SELECT 'judge', judge, judge_tokens_in, judge_tokens_out, judge_cost_usd, judge_latency_s
    FROM dialogue.final_intent_verdicts
    UNION ALL
    SELECT 'speech_target', target, tokens_in, tokens_out, cost_usd, latency_s FROM speech.slm_choices
    WHERE NOT shared_call
    UNION ALL
    SELECT 'voice_target', target, target_tokens_in, target_tokens_out, target_cost_usd, target_latency_s
    FROM voice.voiced_turns WHERE turn > 0
    UNION ALL
    SELECT 'voice_simulator', simulator, simulator_tokens_in, simulator_tokens_out, simulator_cost_usd,
           simulator_latency_s
    FROM voice.voiced_turns WHERE turn > 0
    )
    UNION ALL
    SELECT 'tts', any_value(voice), 0, 0, 0.0, 0.0, any_value(clip_duration_s)
    FROM voice.voiced_turns WHERE turn > 0 GROUP BY clip_sha256
    UNION ALL
    SELECT 'asr', target, 0, 0, 0.0, 0.0, any_value(clip_duration_s)
    FROM voice.voiced_turns WHERE turn > 0 AND asr_transcript IS NOT NULL GROUP BY target, clip_sha256
)
GROUP BY ALL ORDER BY role, model;
