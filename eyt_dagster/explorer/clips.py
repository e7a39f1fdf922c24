"""Which audio files the explorer may serve: only a clip path that speech.eq_items, speech.tts_clips or the spoken
EYT-Bench's voice.voiced_turns (a user turn's clip, or a reply's in audio) / voice.prosody_probe stores, and
only when that path, resolved against the data directory (resources/storage/data_paths.py) with every symlink followed,
is a .wav or .mp3 file inside the data directory. Anything else is refused, so a URL can never reach a file a table
does not name, nor leave the data directory (`..`, an absolute path, a link pointing out)."""

from __future__ import annotations

from pathlib import Path

from eyt_dagster.explorer.reads import Warehouse
from resources.storage.data_paths import is_path_column, resolve_data_path

MEDIA_TYPES = {".wav": "audio/wav", ".mp3": "audio/mpeg"}
CLIP_TABLES = ("speech.eq_items", "speech.tts_clips", "voice.voiced_turns", "voice.prosody_probe")


def is_named_clip(wh: Warehouse, stored: str) -> bool:
    """Whether a clip table stores this path, as written (one look-up per path column, not a read of every path)."""
    with wh.sql(CLIP_TABLES) as con:
        for table in CLIP_TABLES:
            name = table.split(".")[-1]
            columns = [r[0] for r in con.execute(f"DESCRIBE {name}").fetchall() if is_path_column(r[0])]
            for column in columns:
                if con.execute(f'SELECT 1 FROM {name} WHERE "{column}" = ? LIMIT 1', [stored]).fetchone():
                    return True
    return False


def clip_file(wh: Warehouse, stored: str) -> tuple[Path, str] | None:
    """(the file, its media type) for a stored clip path, or None when it may not be served."""
    if not is_named_clip(wh, stored):
        return None
    root = wh.data_dir.resolve()
    path = Path(resolve_data_path(stored, root)).resolve()
    media = MEDIA_TYPES.get(path.suffix.lower())
    if media is None or not path.is_relative_to(root) or not path.is_file():
        return None
    return path, media
