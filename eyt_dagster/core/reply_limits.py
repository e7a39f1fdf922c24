"""Length limits (in characters) of the free-text fields of every JSON reply a model sends: the one place.

The limits travel in the JSON schema sent with each request (`maxLength`), so a server that enforces the
schema stops a field at its limit, and the parser rejects a longer value from a server that does not. Why:
the JSON grammar alone does not bound a string, and a small model that starts repeating itself inside a
string goes on until max_tokens cuts the reply. The limits are generous for real use (several times what
the prompts ask for); docs/remote-models.md lists them with the fields they apply to.
"""

from __future__ import annotations

LABEL_CHARS = 120  # a few words: a topic, a title, a speaker's name, role or persona
SENTENCE_CHARS = 400  # one or two sentences: an intent description, a final intent, a scenario's context
PARAGRAPH_CHARS = 800  # two to four sentences: a judge's rationale, a scenario's description, a review note
MESSAGE_CHARS = 1500  # a whole chat message: the simulated user's turn or first query
SPOKEN_LINE_CHARS = 400  # one line of a SpeechEQ dialogue (spoken by TTS, so short by design)

# With these limits the longest reply any schema allows (compact JSON) is at most this many characters
# (the SpeechEQ scenario, 3,273): about 820 tokens of English at ~4 characters a token, inside the default
# max_tokens of 1,024. Text in other scripts takes more tokens per character: raise max_tokens for it.
LONGEST_REPLY_CHARS = 3300
