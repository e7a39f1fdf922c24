"""The figures behind each encoder's calibration entry (eyt_dagster/eyt_bench/encoder_calibration.py): cosines of the
calibration pairs per language, paraphrase-against-non-paraphrase ranking, Chinese-English translation retrieval,
the shipped pools' near-duplicates, the fitted drift scale and the encoding speed. Not a test
(tests/eyt_bench/test_encoder_calibration.py asserts what the entries rely on); docs/languages.md quotes its output.

    HF_HUB_OFFLINE=1 python bench/encoder_calibration.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.eyt_bench.encoder_calibration import CALIBRATIONS, MINILM, USE_MULTILINGUAL  # noqa: E402
from eyt_dagster.eyt_bench.sampling import deduplicate  # noqa: E402
from eyt_dagster.eyt_bench.settings import PoolSource  # noqa: E402
from resources.datasets.calibration_pairs import PAIR_KINDS, read_pairs  # noqa: E402
from resources.datasets.persona_sources import load_pool_records  # noqa: E402
from resources.text.embeddings import embed  # noqa: E402


def cosines(encoder: str, left: list[str], right: list[str]) -> np.ndarray:
    a, b = embed(left, encoder), embed(right, encoder)
    return np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """The share of (positive, negative) pairs the cosine orders right (ties count half)."""
    wins = (positive[:, None] > negative[None, :]).sum() + 0.5 * (positive[:, None] == negative[None, :]).sum()
    return float(wins / (len(positive) * len(negative)))


def main() -> None:
    pairs = {relation: read_pairs(relation) for relation in PAIR_KINDS}
    english: dict[str, np.ndarray] = {}
    for encoder in (MINILM, USE_MULTILINGUAL):
        entry = CALIBRATIONS[encoder]
        print(f"== {encoder}: threshold {entry.dedup_threshold}, drift scale {entry.drift_scale}")
        for language in ("en", "zh"):
            cos = {
                r: cosines(encoder, [p.a[language] for p in ps], [p.b[language] for p in ps]) for r, ps in pairs.items()
            }
            for relation, values in cos.items():
                above = int((values >= entry.dedup_threshold).sum())
                print(
                    f"  {language} {relation:16s} min {values.min():.3f} median {np.median(values):.3f} "
                    f"max {values.max():.3f}; >= threshold {above}/{len(values)}"
                )
            print(
                f"  {language} paraphrase > non-paraphrase (AUC) {auc(cos['paraphrases'], cos['non_paraphrases']):.3f}"
            )
            if language == "en":
                english[encoder] = np.concatenate(list(cos.values()))
        texts_en = [p.a["en"] for p in pairs["paraphrases"]] + [p.b["en"] for p in pairs["paraphrases"]]
        texts_zh = [p.a["zh"] for p in pairs["paraphrases"]] + [p.b["zh"] for p in pairs["paraphrases"]]
        sims = embed(texts_en, encoder) @ embed(texts_zh, encoder).T
        translation = np.diag(sims)
        top1 = int((sims.argmax(axis=1) == np.arange(len(texts_en))).sum())
        print(
            f"  zh-en translations: cos min {translation.min():.3f} median {np.median(translation):.3f}; "
            f"the translation is the nearest of {len(texts_zh)} Chinese texts for {top1}/{len(texts_en)}"
        )
        for pool in ("nemotron_usa", "personamem_v2"):
            records = load_pool_records(pool, PoolSource())[0]
            vectors = embed([r.persona_text for r in records], encoder)
            reference = deduplicate(records, embed([r.persona_text for r in records], MINILM), 0.85)
            index = {r.persona_id: i for i, r in enumerate(records)}
            near = [float(vectors[index[a]] @ vectors[index[b]]) for a, b in reference.duplicate_of.items()]
            kept = [index[r.persona_id] for r in reference.kept]
            distinct = vectors[kept] @ vectors[kept].T
            np.fill_diagonal(distinct, -1.0)
            result = deduplicate(records, vectors, entry.dedup_threshold)
            print(
                f"  {pool}: MiniLM's {len(near)} near-duplicates at {min(near):.3f}-{max(near):.3f}, distinct personas "
                f"at most {distinct.max():.3f}; dedup drops {len(result.duplicate_of)}, same as MiniLM: "
                f"{result.duplicate_of == reference.duplicate_of}"
            )
        sample = [p.a["en"] for p in pairs["paraphrases"]] + [p.a["zh"] for p in pairs["paraphrases"]]
        embed(sample[:1], encoder)
        started = time.perf_counter()
        embed(sample, encoder)
        print(f"  speed: {len(sample) / (time.perf_counter() - started):.0f} texts/s (short texts, {len(sample)})")
    x, y = 1.0 - english[USE_MULTILINGUAL], 1.0 - english[MINILM]
    print(
        f"drift scale of {USE_MULTILINGUAL} on MiniLM over {len(x)} English pairs: least squares through zero "
        f"{(x @ y) / (x @ x):.4f}, ratio of means {y.mean() / x.mean():.4f}, correlation {np.corrcoef(x, y)[0, 1]:.3f}"
    )


if __name__ == "__main__":
    main()
