"""Model calls: the resources the assets take (the slate, the models, the embeddings, the reports' cache), the
chat client for OpenAI-compatible endpoints and its transport, chat replies in audio, the call cache and ledger on SQLite or
Postgres and their read-only views, endpoint budgets shared by threads and processes, spend caps checked before each call, and a running
step's progress from its calls. Knows no benchmark."""

__all__ = ["cache_backend", "call_cache", "call_reads", "chat_client", "model_access", "run_progress", "spend_guard"]
