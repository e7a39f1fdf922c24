"""The released SpeechEQ layout: import, export, round trips and the folders that must be skipped."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from eyt_dagster.speech_eq.item_types import EqItem
from eyt_dagster.speech_eq.release_format import (
    LayoutError,
    clip_rows,
    item_from_rows,
    item_rows,
    item_to_metadata,
    metadata_to_item,
)
from eyt_dagster.speech_eq.vocabulary import eq_scale
from resources.datasets.speech_release import import_released, write_released

pytestmark = pytest.mark.unit

SLOTS = [
    ("01", 1, None),
    ("02", 2, None),
    ("03", 3, None),
    ("04", 4, "high"),
    ("05", 4, "low"),
    ("06", 5, None),
    ("07", 6, "high"),
    ("08", 6, "low"),
]
ITEMS = {"emp_001": ("interpersonal_empathy", ".wav"), "opt_001": ("stress_management_optimism", ".mp3")}


def release_metadata(slug: str, ext: str, context_level: str) -> dict[str, Any]:
    """metadata.json as the release writes it (by hand, independent of the module under test)."""
    texts = [
        "I got the results back today.",
        "Oh? How did it go?",
        "It's... it's not good. Stage three.",
        "I'm here. Tell me everything.",
        "I don't even know how to tell my kids.",
        "We'll figure it out together.",
    ]
    audio = []
    for number, turn, level in SLOTS:
        entry = {
            "sentence_number": turn,
            "speaker": f"speaker{2 - turn % 2}",
            "text": texts[turn - 1],
            "audio_path": f"audio/{number}{ext}",
            "tone_description": f"tone of file {number}, slow and low",
        }
        if level or context_level == "null":
            entry["eq_level"] = level
        audio.append(entry)
    return {
        "scenario": {
            "title": f"Results {slug}",
            "context": "A hospital corridor",
            "description": "Bad news.",
            "speaker1_name": "Maya",
            "speaker1_role": "patient",
            "speaker1_gender": "Female",
            "speaker1_persona": "Frightened",
            "speaker2_name": "Tom",
            "speaker2_role": "brother",
            "speaker2_gender": "male",
            "speaker2_persona_1": "Grounded and attentive",
            "speaker2_persona_2": "The Toxic Optimist",
            "speaker2_persona_3": "The Impatient Evader",
            "scenario_valence": "Negative",
            "target_social_intent": "Hold space for her fear",
            "eq_skill_tested": "Empathy",
            "voices": {"speaker1": "coral", "speaker2": "ash"},
            "scenario_type": "medical",
        },
        "conversation": [
            {"speaker": f"speaker{2 - t % 2}", "sentence_number": t, "text": texts[t - 1], "context_note": "ignored"}
            for t in range(1, 7)
        ],
        "eq_scale": eq_scale(slug),
        "audio_files": audio,
        "generation_metadata": {"model": "gpt-4.1", "tts_model": "gpt-4o-mini-tts-2025-03-20"},
    }


def write_item(root: Path, slug: str, dataset_id: str, ext: str, context_level: str = "absent") -> Path:
    folder = root / slug / dataset_id
    (folder / "audio").mkdir(parents=True)
    for i, (number, _, _) in enumerate(SLOTS):
        tone = 0.1 * np.sin(2 * np.pi * (200 + 40 * i) * np.arange(1600) / 8000)  # 0.2 s, distinct per clip
        sf.write(folder / "audio" / f"{number}.wav", tone.astype("float32"), 8000)
        if ext != ".wav":  # the importer does not decode audio: WAV bytes under the .mp3 name are enough here
            os.replace(folder / "audio" / f"{number}.wav", folder / "audio" / f"{number}{ext}")
    (folder / "metadata.json").write_text(json.dumps(release_metadata(slug, ext, context_level), indent=2))
    return folder


@pytest.fixture
def release(tmp_path) -> Path:
    root = tmp_path / "release"
    for (dataset_id, (slug, ext)), level in zip(ITEMS.items(), ("absent", "null")):
        write_item(root, slug, dataset_id, ext, level)
    return root


def strip(item: EqItem) -> EqItem:
    """The item without its paths and source, which differ between copies."""
    clips = [c.model_copy(update={"path": ""}) for c in item.clips]
    return item.model_copy(update={"source": "", "clips": clips})


def test_import_maps_high_to_resonant(release):
    report = import_released(release)
    assert report.skipped == [] and sorted(i.dataset_id for i in report.items) == sorted(ITEMS)
    item = next(i for i in report.items if i.dataset_id == "emp_001")
    assert item.subscale == "interpersonal_empathy" and item.scenario.valence == "Negative"
    assert item.scenario.resonant_persona == "Grounded and attentive"
    assert item.scenario.dissonant_personas == ["The Toxic Optimist", "The Impatient Evader"]
    assert item.scenario.speaker1.gender == "female" and item.generation_metadata["voices"]["speaker2"] == "ash"
    resonant4, dissonant6 = item.clip(4, "high"), item.clip(6, "low")
    assert resonant4.file_number == "04" and resonant4.tone_description.startswith("tone of file 04")
    assert dissonant6.file_number == "08" and Path(dissonant6.path).is_absolute()
    assert Path(dissonant6.path) == (release / "interpersonal_empathy/emp_001/audio/08.wav").resolve()
    roles = {r["file_number"]: r["role"] for r in clip_rows(item)}
    assert roles == {
        "01": "context",
        "02": "context",
        "03": "context",
        "04": "resonant",
        "05": "dissonant",
        "06": "context",
        "07": "resonant",
        "08": "dissonant",
    }
    assert all(c.eq_level is None for c in item.clips if c.turn in (1, 2, 3, 5))


def test_write_then_import_round_trip(release, tmp_path):
    items = import_released(release).items
    out = tmp_path / "out"
    folders = write_released(items, out)
    assert sorted(f.relative_to(out).as_posix() for f in folders) == [
        "interpersonal_empathy/emp_001",
        "stress_management_optimism/opt_001",
    ]
    assert (out / "stress_management_optimism/opt_001/audio/04.mp3").is_file()  # source extension kept
    written = json.loads((out / "interpersonal_empathy/emp_001/metadata.json").read_text())
    assert written["audio_files"][3] == {**written["audio_files"][3], "eq_level": "high", "audio_path": "audio/04.wav"}
    assert written["audio_files"][0]["eq_level"] is None and written["scenario"]["voices"]["speaker1"] == "coral"
    again = import_released(out)
    assert again.skipped == []
    assert sorted(map(strip, again.items), key=str) == sorted(map(strip, items), key=str)
    # idempotent for the same items; refuses a different item in an existing folder, before writing anything
    assert write_released(again.items, out) == folders
    changed = items[0].model_copy(update={"scenario": items[0].scenario.model_copy(update={"title": "Other"})})
    with pytest.raises(FileExistsError, match="different item"):
        write_released([changed], out)
    assert import_released(out).items[0].scenario.title != "Other"


def _edit(mutate: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        metadata = json.loads((folder / "metadata.json").read_text())
        mutate(metadata)
        (folder / "metadata.json").write_text(json.dumps(metadata))

    return apply


def _set_path(number: int, value: Callable[[Path], str]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        _edit(lambda m: m["audio_files"][number].update(audio_path=value(folder)))(folder)

    return apply


BROKEN: dict[str, tuple[Callable[[Path], None], str]] = {
    "invalid_json": (lambda f: (f / "metadata.json").write_text('{"scenario": {'), "does not parse"),
    "missing_clip": (lambda f: (f / "audio/05.wav").unlink(), "missing"),
    "dotdot_path": (_set_path(3, lambda f: "../emp_001/audio/04.wav"), "inside the item folder"),
    "absolute_path": (_set_path(3, lambda f: str((f / "audio/04.wav").resolve())), "inside the item folder"),
    "symlink_out": (
        lambda f: (
            (f / "audio/04.wav").unlink(),
            (f / "audio/04.wav").symlink_to((f.parent / "emp_001/audio/04.wav").resolve()),
        ),
        "outside the item folder",
    ),
    "slug_mismatch": (_edit(lambda m: m.update(eq_scale="Stress Management - Optimism")), "eq_scale"),
    "unknown_scale": (_edit(lambda m: m.update(eq_scale="Charisma - Wit")), "eq_scale"),
    "no_eq_level": (_edit(lambda m: m["audio_files"][6].pop("eq_level")), "audio_files[6].eq_level"),
    "five_turns": (_edit(lambda m: m["conversation"].pop()), "conversation"),
    "slot_mismatch": (_edit(lambda m: m["audio_files"][3].update(audio_path="audio/05.wav")), "slot 04"),
    "missing_key": (_edit(lambda m: m["scenario"].pop("speaker2_persona_3")), "scenario.speaker2_persona_3"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_folder_is_reported_and_skipped(release, case):
    mutate, reason = BROKEN[case]
    broken = release / "interpersonal_empathy" / f"bad_{case}"
    shutil.copytree(release / "interpersonal_empathy/emp_001", broken)
    mutate(broken)
    report = import_released(release)
    assert sorted(i.dataset_id for i in report.items) == sorted(ITEMS)
    assert [folder for folder, _ in report.skipped] == [str(broken)]
    assert reason in report.skipped[0][1] and f"bad_{case}" in report.skipped[0][1]


def test_rows_round_trip(release):
    for item in import_released(release).items:
        assert item_from_rows(item_rows(item)) == item
        row = pd.DataFrame([item_rows(item)]).iloc[0].to_dict()  # as read back from a table
        assert item_from_rows(row) == item
        rows = clip_rows(item)
        assert [r["file_number"] for r in rows] == [s[0] for s in SLOTS]
        assert item_rows(item)["turn4_resonant_path"] == item.clip(4, "high").path
        assert item_rows(item)["turn6_dissonant_tone"] == item.clip(6, "low").tone_description


def test_metadata_mapping_is_its_own_inverse(release):
    item = import_released(release).items[0]
    paths = {c.file_number: c.path for c in item.clips}
    assert metadata_to_item(item_to_metadata(item), item.dataset_id, item.source, paths) == item
    # a generated item: no voices, its own speaker-2 persona; survives a trip through JSON text
    speaker2 = item.scenario.speaker2.model_copy(update={"persona": "Steady listener"})
    generated = item.model_copy(
        update={
            "generation_metadata": {},
            "source": "generated",
            "scenario": item.scenario.model_copy(update={"speaker2": speaker2}),
        }
    )
    text = json.dumps(item_to_metadata(generated))
    assert metadata_to_item(json.loads(text), item.dataset_id, "generated", paths) == generated
    broken = item_to_metadata(item)
    del broken["scenario"]["title"]
    with pytest.raises(LayoutError, match=rf"^{item.dataset_id}: scenario.title: missing"):
        metadata_to_item(broken, item.dataset_id, item.source, paths)


def test_write_checks_everything_before_writing(release, tmp_path):
    good, other = sorted(import_released(release).items, key=lambda i: i.dataset_id)
    lost = other.model_copy(
        update={
            "clips": [
                c.model_copy(update={"path": str(tmp_path / "gone.wav")}) if c.file_number == "05" else c
                for c in other.clips
            ]
        }
    )
    out = tmp_path / "out"
    with pytest.raises(FileNotFoundError, match=other.dataset_id):
        write_released([good, lost], out)
    assert not out.exists() or not any(out.rglob("metadata.json"))
    write_released([good], out)
    scenario = good.scenario.model_copy(update={"subscale": "stress_management_optimism"})
    moved = good.model_copy(update={"scenario": scenario})
    with pytest.raises(FileExistsError, match="another subscale"):
        write_released([moved], out)
