"""Single texts through ONNX Runtime: the same vectors as sentence-transformers up to float rounding, the same
bits every time, and torch for a model the export does not cover (resources/text/onnx_encoder.py)."""

from __future__ import annotations

import numpy as np
import pytest

from resources.text.onnx_encoder import OnnxTextEncoder, TorchTextEncoder, exportable, text_encoder
from resources.text.sentence_model import OFFLINE_PACKAGE_MODEL, load_sentence_encoder

pytestmark = pytest.mark.unit

TEXTS = [
    "wants a plan for night shifts",
    "  leading and trailing spaces are stripped, as encode does  ",
    "Ünïcödé, emoji 😀 and 中文 characters",
    "x",
    " ".join(["a long text that the tokenizer must cut at the model's limit"] * 40),  # > 256 word pieces
]


@pytest.fixture(scope="module")
def model():
    return load_sentence_encoder(OFFLINE_PACKAGE_MODEL)


def test_the_default_model_runs_in_onnx_runtime_with_sentence_transformers_vectors(model):
    encoder = text_encoder(OFFLINE_PACKAGE_MODEL)
    assert encoder.backend == "onnxruntime" and exportable(model)
    for text in TEXTS:
        fast = encoder.encode(text)
        reference = TorchTextEncoder(model).encode(text)
        assert fast.dtype == np.float32 and fast.shape == (384,)
        assert np.allclose(fast, reference, atol=1e-6), (text, float(np.abs(fast - reference).max()))
        assert abs(float(np.linalg.norm(fast)) - 1.0) < 1e-5
    # cosines, what intent_similarity stores, agree to the sixth decimal
    a, b = encoder.encode(TEXTS[0]), encoder.encode(TEXTS[1])
    ta, tb = TorchTextEncoder(model).encode(TEXTS[0]), TorchTextEncoder(model).encode(TEXTS[1])
    assert float(np.dot(a, b)) == pytest.approx(float(np.dot(ta, tb)), abs=1e-6)


def test_the_same_text_gives_the_same_bits_from_another_export(model):
    first, second = OnnxTextEncoder(model), OnnxTextEncoder(model)
    for text in TEXTS:
        assert np.array_equal(first.encode(text), second.encode(text))
        assert np.array_equal(first.encode(text), first.encode(text))


def test_a_model_with_other_pooling_is_encoded_with_torch(model):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling

    transformer = model[0]
    cls = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "cls")])
    assert not exportable(cls)
    assert not exportable(SentenceTransformer(modules=[transformer, model[1]]))  # no normalisation
    torch_encoder = TorchTextEncoder(cls)
    vector = torch_encoder.encode("a text")
    assert torch_encoder.backend == "torch" and vector.shape == (384,)
