"""Which language-identification library is right more often, and how fast, on the hand-built set
eyt_dagster/fixtures/language_id/replies.tsv (short and long English and Chinese replies, mixed ones, other
languages, and texts with too little language: code, numbers, emoji, "OK"). Not a test; docs/languages.md quotes it.

Every library sees the same text: resources/text/language_id.py's `language_text` (code and URLs removed, None when too
little language is left), and the same candidate languages. The candidates that are not dependencies are measured
when installed (`pip install lingua-language-detector langdetect`) and skipped otherwise.

    python bench/language_id_candidates.py
"""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from resources.text.language_id import CANDIDATES, language_text  # noqa: E402

SET = ROOT / "eyt_dagster" / "fixtures" / "language_id" / "replies.tsv"
Detector = Callable[[str], "str | None"]


def py3langid() -> Detector:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(CANDIDATES))
    return lambda text: str(identifier.classify(text)[0])


def lingua(low_accuracy: bool) -> Callable[[], Detector]:
    def make() -> Detector:
        from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

        languages = [Language.from_iso_code_639_1(getattr(IsoCode639_1, c.upper())) for c in CANDIDATES]
        builder = LanguageDetectorBuilder.from_languages(*languages).with_preloaded_language_models()
        detector = (builder.with_low_accuracy_mode() if low_accuracy else builder).build()

        def detect(text: str) -> str | None:
            found = detector.detect_language_of(text)
            return None if found is None else found.iso_code_639_1.name.lower()

        return detect

    return make


def langdetect() -> Detector:
    from langdetect import DetectorFactory, LangDetectException, detect_langs

    DetectorFactory.seed = 0  # langdetect samples at random unless seeded

    def detect(text: str) -> str | None:
        try:
            ranked = [p.lang.split("-")[0] for p in detect_langs(text)]
        except LangDetectException:
            return None
        return next((code for code in ranked if code in CANDIDATES), None)

    return detect


def main() -> None:
    with SET.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    texts = [row["text"].replace("\\n", "\n") for row in rows]
    expected = [None if row["expected"] == "none" else row["expected"] for row in rows]
    prose = [language_text(text) for text in texts]
    for name, make in (
        ("py3langid", py3langid),
        ("lingua-language-detector", lingua(False)),
        ("lingua-language-detector (low accuracy mode)", lingua(True)),
        ("langdetect", langdetect),
    ):
        try:
            started = time.perf_counter()
            detect = make()
        except ImportError:
            print(f"{name}: not installed, skipped")
            continue
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        found = [None if p is None else detect(p) for p in prose]
        per_text = (time.perf_counter() - started) / len(texts)
        kinds: dict[str, list[int]] = {}
        for row, want, got in zip(rows, expected, found):
            kinds.setdefault(row["kind"], [0, 0])
            kinds[row["kind"]][0] += want == got
            kinds[row["kind"]][1] += 1
        right = sum(want == got for want, got in zip(expected, found))
        print(
            f"{name}: {right}/{len(texts)} right ({', '.join(f'{k} {r}/{n}' for k, (r, n) in kinds.items())}); "
            f"load {loaded:.2f} s, {per_text * 1000:.2f} ms a text"
        )
        for text, want, got in zip(texts, expected, found):
            if want != got:
                print(f"    {text[:50]!r}: expected {want}, got {got}")


if __name__ == "__main__":
    main()
