"""The embedded baselines' lexicon of each language: the English one (lexicon.py) and the Chinese one
(lexicon_zh.py), with the same names, so the simulator, the targets and the judge speak either."""

from __future__ import annotations

from types import ModuleType

import eyt_dagster.eyt_bench.baselines.lexicon as english
import eyt_dagster.eyt_bench.baselines.lexicon_zh as chinese

LEXICONS: dict[str, ModuleType] = {"en": english, "zh": chinese}


def lexicon(language: str) -> ModuleType:
    """The lexicon the baselines use for a pool played in `language`."""
    if language not in LEXICONS:
        raise ValueError(
            f"the embedded baselines have no lexicon for language '{language}'; they speak {list(LEXICONS)}"
        )
    return LEXICONS[language]
