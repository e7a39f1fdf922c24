"""The encoder-calibration pair files shipped in eyt_dagster/fixtures/encoder_calibration/ (invented texts; see that
folder's section in eyt_dagster/fixtures/README.md): near-duplicates, paraphrases and non-paraphrases, each row a
pair written in English and in Chinese (the Chinese pair translates the English one)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

PAIRS_DIR = Path(__file__).resolve().parents[2] / "eyt_dagster" / "fixtures" / "encoder_calibration"
PAIR_KINDS = ("near_duplicates", "paraphrases", "non_paraphrases")
_COLUMNS = ["kind", "en_a", "en_b", "zh_a", "zh_b"]


@dataclass(frozen=True)
class TextPair:
    relation: str  # one of PAIR_KINDS
    kind: str  # "persona" or "intent"
    a: dict[str, str]  # language -> the first text
    b: dict[str, str]  # language -> the second text


def read_pairs(relation: str, folder: Path = PAIRS_DIR) -> list[TextPair]:
    """The pairs of one file (`<relation>.tsv`, tab-separated, columns kind, en_a, en_b, zh_a, zh_b)."""
    path = folder / f"{relation}.tsv"
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        if reader.fieldnames != _COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames}, expected {_COLUMNS} (tab-separated)")
        pairs = []
        for line, row in enumerate(reader, start=2):
            if any(not (row.get(c) or "").strip() for c in _COLUMNS):
                raise ValueError(f"{path}, line {line}: every column needs a value ({', '.join(_COLUMNS)})")
            pairs.append(
                TextPair(
                    relation,
                    row["kind"],
                    {"en": row["en_a"], "zh": row["zh_a"]},
                    {"en": row["en_b"], "zh": row["zh_b"]},
                )
            )
    return pairs
