"""Model calls: the model-access resource (slate, caches, a chat client for any model), the chat client for
OpenAI-compatible endpoints and its transport, chat replies in audio, the call cache and ledger on SQLite or
Postgres and their read-only views, endpoint budgets shared by threads and processes, and a running step's
progress from its calls. Knows no benchmark."""

__all__ = ["cache_backend", "call_cache", "call_reads", "chat_client", "model_access", "run_progress"]
