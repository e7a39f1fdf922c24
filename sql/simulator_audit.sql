-- simulator_audit_sql: the simulator audit recomputed from dialogue.dialogue_turns, one row per answered turn of a
-- finished dialogue: the lexical leak share, role flip, repetition, empty turn, the dialogue's early end, its flags
-- and `flagged` (eyt_dagster/eyt_bench/simulator_audit.py is the Python side; docs/eyt-metrics.md the checks).
-- Three inputs cannot be recomputed here and are read from dialogue.simulator_audit: `leak_cosine` (a sentence
-- embedding), the optional model check's `model_leak` / `model_role_flip` (a model's answer), and the pool's
-- `language` (a slate setting), which picks the statements and whether the content-word share is measured. Everything else
-- comes from the turns and the constants below, which tests/eyt_bench/test_simulator_audit.py checks against the Python
-- ones. Usage: .read sql/simulator_audit.sql; FROM simulator_audit_sql;

-- thresholds (simulator_audit.py) and the stop rule's first possible turn (dialogue_loop.ACHIEVED_TO_STOP)
CREATE OR REPLACE TEMP MACRO audit_leak_cosine() AS 0.55;
CREATE OR REPLACE TEMP MACRO audit_leak_overlap() AS 0.6;
CREATE OR REPLACE TEMP MACRO audit_copy_jaccard() AS 0.8;
CREATE OR REPLACE TEMP MACRO audit_repeat_jaccard() AS 0.9;
CREATE OR REPLACE TEMP MACRO audit_achieved_to_stop() AS 2;

-- each latent intent's first-person statement per language (taxonomy.LATENT_STATEMENTS_BY_LANGUAGE)
CREATE OR REPLACE TEMP VIEW audit_latent_statements AS
SELECT * FROM (VALUES
    ('seeking_validation', 'en', 'I want you to tell me that I am right and that what I did was okay.'),
    ('building_connection', 'en', 'I want to feel a personal connection with you, like talking to a friend.'),
    ('need_for_security', 'en', 'I want to feel safe and be reassured that everything will be fine.'),
    ('need_to_be_understood', 'en', 'I want you to really understand how I feel.'),
    ('seeking_autonomy', 'en', 'I want to make this decision on my own, without being told what to do.'),
    ('self_improvement', 'en', 'I want to become a better version of myself and grow.'),
    ('seeking_relief', 'en', 'I want relief from this stress and to feel lighter.'),
    ('seeking_enjoyment', 'en', 'I want to have fun and enjoy myself.'),
    ('seeking_validation', 'zh', '我希望你告诉我，我是对的，我做的事没有错。'),
    ('building_connection', 'zh', '我想和你有一种亲近的感觉，就像跟朋友聊天一样。'),
    ('need_for_security', 'zh', '我想感到安全，想听你说一切都会好起来的。'),
    ('need_to_be_understood', 'zh', '我希望你真正理解我现在的感受。'),
    ('seeking_autonomy', 'zh', '我想自己做这个决定，不想别人告诉我该怎么做。'),
    ('self_improvement', 'zh', '我想成为更好的自己，想不断成长。'),
    ('seeking_relief', 'zh', '我想从这种压力里解脱出来，让自己轻松一点。'),
    ('seeking_enjoyment', 'zh', '我想开开心心地玩一玩，好好享受一下。')
) AS s(intent, language, statement);

-- words too common to count as a statement's content (simulator_audit._STOP)
CREATE OR REPLACE TEMP MACRO audit_stop_words() AS [
    'a', 'an', 'and', 'are', 'as', 'at', 'be', 'been', 'but', 'by', 'can', 'do', 'feel', 'for', 'from', 'how', 'i',
    'i''m', 'if', 'in', 'is', 'it', 'its', 'just', 'like', 'me', 'my', 'of', 'on', 'or', 'really', 'so', 'that',
    'the', 'this', 'to', 'want', 'was', 'what', 'when', 'with', 'without', 'you', 'your'];

-- how an assistant opens a message, in English and in Chinese (simulator_audit.ASSISTANT_OPENINGS)
CREATE OR REPLACE TEMP MACRO audit_assistant_openings() AS [
    'as an ai', 'as a language model', 'as your assistant', 'how can i help', 'how can i assist', 'how may i help',
    'i''d be happy to help', 'i would be happy to help', 'i''m happy to help', 'i can help you with', 'here are some',
    'here''s a plan', 'here is a plan', 'great question', 'certainly! here', 'sure! here',
    '作为一个ai', '作为ai', '作为人工智能', '作为一个人工智能', '作为一个语言模型', '作为语言模型', '作为你的助手',
    '我是一个ai', '我是人工智能', '有什么可以帮', '有什么我可以帮', '我很乐意帮', '很高兴为你', '很高兴为您',
    '我可以帮你', '我可以帮您', '以下是一些', '以下是几', '这里有一些', '好问题', '这是个好问题',
    '当然！以下', '当然，以下'];

-- the characters Python's str.strip() removes (those for which str.isspace() is true)
CREATE OR REPLACE TEMP MACRO audit_spaces() AS
    chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(28) || chr(29) || chr(30) || chr(31) || chr(32)
    || chr(133) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196)
    || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233)
    || chr(8239) || chr(8287) || chr(12288);

-- Python's str.lower(): DuckDB's lower() agrees with it on every code point but one, U+0130 (capital I with a dot),
-- which Python lowers to two code points, 'i' and U+0307 (a combining dot that splits a word), DuckDB to 'i'.
CREATE OR REPLACE TEMP MACRO audit_lower(text) AS lower(replace(coalesce(text, ''), chr(304), 'i' || chr(775)));
-- the audit's words: each CJK ideograph (core/languages.IDEOGRAPHS) and each run of a-z, 0-9 and the apostrophe in
-- the lowered text (simulator_audit.words)
CREATE OR REPLACE TEMP MACRO audit_words(text) AS regexp_extract_all(
    audit_lower(text),
    '[\x{3007}\x{3400}-\x{4dbf}\x{4e00}-\x{9fff}\x{f900}-\x{faff}\x{20000}-\x{3ffff}]|[a-z0-9'']+');
-- token Jaccard of two word lists, as sets (0 when both are empty)
CREATE OR REPLACE TEMP MACRO audit_jaccard(a, b) AS
    CASE WHEN len(list_distinct(a)) + len(list_distinct(b)) = 0 THEN 0.0::DOUBLE
         ELSE len(list_intersect(a, b))
              / (len(list_distinct(a)) + len(list_distinct(b)) - len(list_intersect(a, b))) END;
-- the statement's content words: not a stop word, longer than two characters (simulator_audit.content_words)
CREATE OR REPLACE TEMP MACRO audit_content_words(text) AS
    list_distinct(list_filter(audit_words(text),
                              lambda w: NOT list_contains(audit_stop_words(), w) AND length(w) > 2));
-- the utterance opens with an assistant's formula, once stripped and lowered (simulator_audit.assistant_like)
CREATE OR REPLACE TEMP MACRO audit_assistant_like(text) AS
    len(list_filter(audit_assistant_openings(),
                    lambda o: starts_with(audit_lower(trim(coalesce(text, ''), audit_spaces())), o))) > 0;

CREATE OR REPLACE TEMP VIEW simulator_audit_sql AS
WITH turns AS (  -- the answered turns of finished dialogues (dialogue_scoring.answered_turns)
    SELECT t.target, t.pool, t.seed_id, t.turn, t.simulator, t.progress, t.user_text,
           audit_words(t.user_text) AS tokens,
           array_to_string(audit_words(t.user_text), ' ') AS normalised,
           coalesce(lag(audit_words(t.response_text)) OVER dialogue, []) AS previous_reply,
           coalesce(a.language, 'en') AS language, s.statement
    FROM dialogue.dialogue_turns t
    LEFT JOIN dialogue.simulator_audit a USING (target, pool, seed_id, turn)
    LEFT JOIN audit_latent_statements s ON s.intent = t.gold_latent_intent AND s.language = coalesce(a.language, 'en')
    WHERE t.error IS NULL AND t.turn > 0 AND t.complete IS NOT FALSE
    WINDOW dialogue AS (PARTITION BY t.target, t.pool, t.seed_id ORDER BY t.turn)
), repeats AS (  -- a turn that repeats an earlier utterance of its dialogue
    SELECT a.target, a.pool, a.seed_id, a.turn
    FROM turns a JOIN turns b USING (target, pool, seed_id)
    WHERE b.turn < a.turn AND len(a.tokens) > 0
      AND (a.normalised = b.normalised OR audit_jaccard(a.tokens, b.tokens) >= audit_repeat_jaccard())
    GROUP BY ALL
), ends AS (  -- the stop rule fired at the first turn it can
    SELECT target, pool, seed_id,
           max(turn) <= audit_achieved_to_stop() AND coalesce(arg_max(progress, turn) = 'achieved', false) AS early_end
    FROM turns GROUP BY ALL
), checked AS (
    SELECT t.target, t.pool, t.seed_id, t.turn, t.simulator, a.leak_cosine,
           CASE WHEN t.statement IS NOT NULL AND t.language = 'en'  -- the share is measured in English only
                THEN len(list_intersect(audit_content_words(t.statement), t.tokens))
                     / len(audit_content_words(t.statement)) END AS leak_overlap,
           t.statement IS NOT NULL AS has_statement,
           audit_assistant_like(t.user_text)
               OR (len(t.previous_reply) > 0 AND audit_jaccard(t.tokens, t.previous_reply) >= audit_copy_jaccard())
               AS role_flip,
           r.turn IS NOT NULL AS repetition,
           len(t.tokens) = 0 AS empty_turn,
           e.early_end,
           a.model_leak, a.model_role_flip
    FROM turns t
    JOIN ends e USING (target, pool, seed_id)
    LEFT JOIN repeats r USING (target, pool, seed_id, turn)
    LEFT JOIN dialogue.simulator_audit a USING (target, pool, seed_id, turn)
), leaks AS (
    SELECT * EXCLUDE (has_statement),
           has_statement AND (coalesce(leak_cosine >= audit_leak_cosine() AND NOT isnan(leak_cosine), false)
                              OR coalesce(leak_overlap >= audit_leak_overlap(), false)) AS latent_leak
    FROM checked
), dialogues AS (  -- a dialogue's flags, in the Python table's order
    SELECT target, pool, seed_id,
           concat_ws(',',
                     CASE WHEN bool_or(latent_leak) THEN 'latent_leak' END,
                     CASE WHEN bool_or(role_flip) THEN 'role_flip' END,
                     CASE WHEN bool_or(repetition) THEN 'repetition' END,
                     CASE WHEN bool_or(empty_turn) THEN 'empty_turn' END,
                     CASE WHEN bool_or(early_end) THEN 'early_end' END,
                     CASE WHEN coalesce(bool_or(model_leak), false) THEN 'model_leak' END,
                     CASE WHEN coalesce(bool_or(model_role_flip), false) THEN 'model_role_flip' END)
               AS simulator_flags
    FROM leaks GROUP BY ALL
)
SELECT l.target, l.pool, l.seed_id, l.turn, l.simulator, l.leak_cosine, l.leak_overlap, l.latent_leak, l.role_flip,
       l.repetition, l.empty_turn, l.early_end, l.model_leak, l.model_role_flip, d.simulator_flags,
       d.simulator_flags <> '' AS flagged
FROM leaks l JOIN dialogues d USING (target, pool, seed_id)
ORDER BY l.target, l.pool, l.seed_id, l.turn;
