"""The sentence encoder's tokenizer without transformers: the `tokenizers` package running the very pipeline the
model's tokenizer runs, so that a process holding the stored ONNX graph (resources/text/onnx_graph_store.py) needs
neither transformers nor torch to encode a text.

What `model.preprocess([text])` does to one text with the models the ONNX path takes (a fast tokenizer under
sentence-transformers' Transformer module): the fast tokenizer's pipeline (normaliser, pre-tokeniser, word model,
special tokens; sentence-transformers' `do_lower_case` adds a Lowercase normaliser to it) encodes the text with
its special tokens, truncated "longest first" to the tokenizer's `model_max_length` (the module's
`max_seq_length`) on its truncation side; one text alone is not padded; the features are input_ids, attention_mask
and token_type_ids. `TokenizerSpec` is that pipeline (its JSON serialisation, taken from the loaded model's
tokenizer) and those settings, stored beside the graph; `StandaloneTokenizer` applies them.

A model is only stored when `reproduces` finds the same features as `model.preprocess` on `PROBES` (empty and
blank texts, surrounding and inner blanks, capitals, accents, CJK, emoji, control characters, special tokens
written in the text, a text longer than any model's cut), so a preprocessing step this module does not know of
(stripping that matters to the tokenizer, a prompt, another input) keeps the model on the path that loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# the longest cut a stored tokenizer applies; a tokenizer without a real limit (transformers' "very large integer")
# is not reproduced
MAX_LENGTH_LIMIT = 1_000_000

PROBES: tuple[str, ...] = (
    "",
    " ",
    " \t\n ",
    "wants a plan for night shifts",
    "  Leading and TRAILING blanks, inner   runs\tof\nblanks  ",
    "Ünïcödé ÀÉÎ café naïve Straße",
    "中文字符和标点，还有日本語のかな",
    "emoji 😀👍🏽 and symbols ©®™ ∑",
    "control\x00and\x07zero\u200bwidth\u00a0characters\ufeff",
    "[CLS] [SEP] [PAD] [UNK] [MASK] <s> </s> <pad> written in the text",
    "mixed: English, 中文, Ελληνικά, русский, العربية 123-456 http://example.org/a?b=c",
    " ".join(["a long text that every model must cut at its limit of tokens"] * 120),
)


@dataclass(frozen=True)
class TokenizerSpec:
    """A fast tokenizer's pipeline (the `tokenizers` JSON serialisation) and how the model calls it."""

    tokenizer_json: str
    max_length: int
    truncation_side: str
    encode_special_tokens: bool
    inputs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "tokenizer_json": self.tokenizer_json,
            "max_length": self.max_length,
            "truncation_side": self.truncation_side,
            "encode_special_tokens": self.encode_special_tokens,
            "inputs": list(self.inputs),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TokenizerSpec:
        inputs = tuple(str(name) for name in data["inputs"])
        if not set(inputs) <= set(MODEL_INPUTS) or data["truncation_side"] not in ("left", "right"):
            raise ValueError(f"not a tokenizer this module reproduces: inputs {inputs}, {data['truncation_side']}")
        return cls(
            tokenizer_json=str(data["tokenizer_json"]),
            max_length=int(data["max_length"]),
            truncation_side=str(data["truncation_side"]),
            encode_special_tokens=bool(data["encode_special_tokens"]),
            inputs=inputs,
        )


def spec_of(model: SentenceTransformer, inputs: tuple[str, ...]) -> TokenizerSpec | None:
    """The spec of the model's tokenizer, or None when it is no fast tokenizer with a finite cut."""
    tokenizer = getattr(model[0], "tokenizer", None)
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        return None
    max_length = tokenizer.model_max_length
    if not isinstance(max_length, int) or not 0 < max_length <= MAX_LENGTH_LIMIT:
        return None
    backend = tokenizer.backend_tokenizer
    return TokenizerSpec(
        tokenizer_json=backend.to_str(),
        max_length=max_length,
        truncation_side=str(tokenizer.truncation_side),
        encode_special_tokens=bool(backend.encode_special_tokens),
        inputs=inputs,
    )


class StandaloneTokenizer:
    """One text at a time into the graph's input arrays (int64, shape (1, tokens)), as `model.preprocess` gives."""

    def __init__(self, spec: TokenizerSpec) -> None:
        from tokenizers import Tokenizer

        self.inputs = spec.inputs
        self.tokenizer = Tokenizer.from_str(spec.tokenizer_json)
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(
            spec.max_length, stride=0, strategy="longest_first", direction=spec.truncation_side
        )
        self.tokenizer.encode_special_tokens = spec.encode_special_tokens

    def features(self, text: str) -> dict[str, np.ndarray]:
        encoding = self.tokenizer.encode(text, add_special_tokens=True)
        rows = {
            "input_ids": encoding.ids,
            "attention_mask": encoding.attention_mask,
            "token_type_ids": encoding.type_ids,
        }
        return {name: np.asarray([rows[name]], dtype=np.int64) for name in self.inputs}


def model_features(model: SentenceTransformer, text: str) -> dict[str, np.ndarray]:
    """What `model.preprocess([text])` gives, as arrays: the graph's inputs and any other feature but the
    modality's name."""
    features = model.preprocess([text])
    return {
        name: np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        for name, value in features.items()
        if name != "modality"
    }


def reproduces(model: SentenceTransformer, tokenizer: StandaloneTokenizer) -> bool:
    """Whether the tokenizer gives exactly the model's features (the same names, the same numbers) on every probe."""
    for text in PROBES:
        expected = model_features(model, text)
        got = tokenizer.features(text)
        if set(expected) != set(got) or any(not np.array_equal(expected[name], got[name]) for name in expected):
            return False
    return True
