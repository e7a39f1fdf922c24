"""Text models that run in the process: sentence encoders (MiniLM in torch or ONNX Runtime, its ONNX graph kept on
disk, the multilingual Universal Sentence Encoder), the embedding cache and the background encoding queue, language
identification."""

__all__ = ["embedding_cache", "embedding_queue", "embeddings", "language_id", "onnx_encoder"]
