"""EYT-Bench assets: persona_pool, chat_seeds, dialogue_turns, the judge verdicts, intent_similarity, dialogue_scores."""
