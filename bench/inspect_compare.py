"""Side-by-side check: Inspect AI running the same shape of work as `eyt bench`, against the same server.

Not part of the test suite and not a dependency of the project: Inspect AI (the UK AISI evaluation
framework, PyPI `inspect-ai`) lives in a virtualenv of its own, in a folder of your choice (`$VENV` below;
any path outside this checkout). Set it up once (the package registry is enough):

    VENV=$HOME/venvs/inspect                  # or any other folder
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install inspect-ai openai

and run, from the repository root:

    "$VENV/bin/python" bench/inspect_compare.py                 # 130 dialogues, latency 0.2 s then 0
    "$VENV/bin/python" bench/inspect_compare.py --dialogues 10  # a quick look
    "$VENV/bin/python" bench/inspect_compare.py --json out.json # also keep the figures

The shape (the text pipeline's dialogue and judge stages, see docs/throughput.md): each dialogue (an
Inspect sample) has `--turns` turns; a turn asks the target model for a perception and a reply at the same
time (both only need the history), then asks the simulator model for the next user message; after the last
turn a scorer asks the judge model once per turn, all at once. 130 dialogues x 8 turns make
130 x 8 x 3 + 130 x 8 = 4,160 calls. The three models are distinct model names on one localhost
OpenAI-compatible server (eyt_dagster/ops/bench_server.py: it answers after a fixed latency with a fixed
sentence and counts what it holds at once, per model), reached through Inspect's `openai-api` provider as
`openai-api/bench/<model>`, which reads BENCH_BASE_URL and BENCH_API_KEY. The target is the eval's model;
the simulator and the judge are model roles (`get_model(role=...)`).

Settings, and why:
* max_connections=32 for the eval (Inspect gives each `openai-api` model name its own pool of that size,
  and models fetched with get_model() inherit it), the same budget `eyt bench` gives each model. A set
  max_connections also switches off the adaptive connection limit that recent Inspect releases use when it
  is not set, so the pools stay at 32.
* max_samples = the number of dialogues (Inspect's default would be max_connections, 32): with every
  dialogue admitted at once, the per-model connection pools, not the sample limit, bound the schedule,
  as in `eyt bench` where every dialogue of a partition is eligible at once.
* Inspect's retries, timeouts and model cache are left at their defaults (no cache). Logs are written the
  default way (the `.eval` format, samples included) into a temporary log directory removed at the end
  (`--log-dir` keeps them). The console display is off (`--display none`) so that the figures do not
  depend on the terminal; `--display full` shows Inspect's usual progress screen.

Processes: this script runs the server in its own process, with threads (it is stdlib-only, so the
Inspect virtualenv can import it from this checkout), and each eval in a fresh child process of the same
interpreter (this file with --child). That is `eyt bench`'s layout (server in the bench process, client in
a subprocess); the fresh child also keeps one latency's model clients, pools and memoized models out of
the next one.

What it prints, per latency: the calls the server answered (and the expected count), the wall time of the
`eval()` call in the child (Inspect's start-up inside eval() included; interpreter start and imports not),
the most requests the server held at once per model, the latency-bound ideal (see `Shape.ideal_s`) and
Inspect's version.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERVICE = "bench"  # openai-api/<service>/<model>: Inspect reads <SERVICE>_BASE_URL and <SERVICE>_API_KEY
MODELS = {"target": "bench-target", "simulator": "bench-simulator", "judge": "bench-judge"}

PERCEIVE_PROMPT = "Read the conversation and say in two sentences how the user feels and what they need."
REPLY_PROMPT = "You are a supportive listener. Answer the user's last message warmly and briefly."
SIMULATE_PROMPT = (
    "You play the person described below, talking to a listener. Write your next message only.\n"
    "Who you are: {persona}\nThe conversation so far:\n{transcript}"
)
JUDGE_PROMPT = "Rate how well the listener's reply meets the user's feelings, from 1 to 5, with one line of reasons."


@dataclass(frozen=True)
class Shape:
    """The work of one eval: `dialogues` dialogues of `turns` turns, `max_connections` per model."""

    dialogues: int = 130
    turns: int = 8
    max_connections: int = 32

    def calls_by_role(self) -> dict[str, int]:
        per_dialogue = {"target": 2 * self.turns, "simulator": self.turns, "judge": self.turns}
        return {role: self.dialogues * n for role, n in per_dialogue.items()}

    def calls(self) -> int:
        return sum(self.calls_by_role().values())

    def chain(self) -> int:
        """Calls one dialogue must make one after another: per turn (perception | reply), then the simulator;
        then one wave of judge calls."""
        return 2 * self.turns + 1

    def waves(self) -> int:
        """Rounds of `max_connections` calls the busiest model needs."""
        return max(math.ceil(n / self.max_connections) for n in self.calls_by_role().values())

    def ideal_s(self, latency_s: float) -> float:
        """No schedule can beat latency x max(waves of the busiest model, the dependent chain).

        This is the bound of the whole eval, where the judges of early dialogues overlap the turns of later
        ones; `eyt bench` sums one such bound per stage, because its dialogue and judge stages run one after
        the other."""
        return latency_s * max(self.waves(), self.chain())


# ---------------------------------------------------------------- the Inspect side (child process only)


def build_task(shape: Shape):  # -> inspect_ai.Task; Inspect is imported here so the module loads without it
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, get_model
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.solver import Generate, TaskState, solver

    def transcript(history: list[ChatMessage]) -> str:
        return "\n".join(f"{'me' if m.role == 'user' else 'listener'}: {m.text}" for m in history)

    @solver
    def dialogue(turns: int):
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            target = get_model()  # the eval's model
            simulator = get_model(role="simulator", required=True)
            history: list[ChatMessage] = [ChatMessageUser(content=state.input_text)]
            for _ in range(turns):
                perception, reply = await asyncio.gather(
                    target.generate([ChatMessageSystem(content=PERCEIVE_PROMPT), *history]),
                    target.generate([ChatMessageSystem(content=REPLY_PROMPT), *history]),
                )
                history.append(ChatMessageAssistant(content=reply.completion))
                state.store.set("perceptions", [*state.store.get("perceptions", []), perception.completion])
                prompt = SIMULATE_PROMPT.format(persona=state.metadata["persona"], transcript=transcript(history))
                next_message = await simulator.generate([ChatMessageUser(content=prompt)])
                history.append(ChatMessageUser(content=next_message.completion))
            state.messages = history
            return state

        return solve

    @scorer(metrics=[mean()])
    def judge_turns():
        async def score(state: TaskState, target: Target) -> Score:
            judge = get_model(role="judge", required=True)
            messages = state.messages
            turns = [(messages[i], messages[i + 1]) for i in range(0, len(messages) - 1, 2)]
            verdicts = await asyncio.gather(
                *(
                    judge.generate(
                        [
                            ChatMessageSystem(content=JUDGE_PROMPT),
                            ChatMessageUser(content=f"User: {user.text}\nListener: {reply.text}"),
                        ]
                    )
                    for user, reply in turns
                )
            )
            answered = sum(1 for v in verdicts if v.completion)
            return Score(value=answered / max(1, len(turns)), explanation=f"{answered} of {len(turns)} verdicts")

        return score

    samples = [
        Sample(
            id=i + 1,
            input=f"I have had a rough week and I keep thinking about it (dialogue {i + 1}).",
            metadata={"persona": f"Person {i + 1}, tired after a long week at work, wants to be heard."},
        )
        for i in range(shape.dialogues)
    ]
    return Task(dataset=MemoryDataset(samples), solver=dialogue(shape.turns), scorer=judge_turns())


def child(args: argparse.Namespace) -> None:
    """Run one eval against the server at args.base_url; write the figures to args.result."""
    import inspect_ai
    from inspect_ai import eval as inspect_eval

    os.environ[f"{SERVICE.upper()}_BASE_URL"] = args.base_url
    os.environ[f"{SERVICE.upper()}_API_KEY"] = "bench"  # the server ignores it; the provider requires one
    shape = Shape(args.dialogues, args.turns, args.max_connections)
    task = build_task(shape)
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    logs = inspect_eval(
        task,
        model=f"openai-api/{SERVICE}/{MODELS['target']}",
        model_roles={role: f"openai-api/{SERVICE}/{MODELS[role]}" for role in ("simulator", "judge")},
        max_connections=shape.max_connections,
        max_samples=args.max_samples or shape.dialogues,
        log_dir=args.log_dir,
        display=args.display,
    )
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    log = logs[0]
    scores = [m.value for s in (log.results.scores if log.results else []) for m in s.metrics.values()]
    result = {
        "inspect_version": inspect_ai.__version__,
        "eval_wall_s": wall,
        # CPU time of the child's own process during eval() (user + system): the client's work
        "eval_cpu_s": (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime),
        "inspect_started_at": log.stats.started_at,
        "inspect_completed_at": log.stats.completed_at,
        "status": log.status,
        "error": str(log.error.message) if log.error else None,
        "samples_completed": log.results.completed_samples if log.results else 0,
        "mean_score": scores[0] if scores else None,
        "log_file": log.location,
    }
    Path(args.result).write_text(json.dumps(result))


# ---------------------------------------------------------------- the driver


def timed_server(latency_s: float):
    """The bench server, also noting when the first request arrived and when the last one was answered."""
    sys.path.insert(0, str(REPO))
    from eyt_dagster.ops.bench_server import LatencyServer

    class TimedServer(LatencyServer):
        first_request: float | None = None
        last_answer: float | None = None

        def enter(self, model: str = "") -> None:
            if self.first_request is None:
                self.first_request = time.perf_counter()
            super().enter(model)

        def leave(self, model: str = "") -> None:
            super().leave(model)
            self.last_answer = time.perf_counter()

        def calls_span_s(self) -> float:
            return (self.last_answer or 0.0) - (self.first_request or 0.0)

    return TimedServer(latency_s)


def measure(shape: Shape, latency_s: float, args: argparse.Namespace, log_dir: str) -> dict:
    """Start the server at `latency_s`, run one eval in a child process, return the figures."""
    with tempfile.TemporaryDirectory() as tmp, timed_server(latency_s) as server:
        result_file = Path(tmp) / "result.json"
        command = [
            sys.executable,
            __file__,
            "--child",
            "--base-url",
            server.base_url,
            "--result",
            str(result_file),
            "--dialogues",
            str(shape.dialogues),
            "--turns",
            str(shape.turns),
            "--max-connections",
            str(shape.max_connections),
            "--max-samples",
            str(args.max_samples or shape.dialogues),
            "--log-dir",
            log_dir,
            "--display",
            args.display,
        ]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=REPO)
        process_wall = time.perf_counter() - started
        if done.returncode != 0 or not result_file.exists():
            raise SystemExit(f"the Inspect child process failed (exit {done.returncode}); its output is above")
        figures = json.loads(result_file.read_text())
        figures.update(
            latency_s=latency_s,
            process_wall_s=process_wall,
            calls=server.requests,
            # first request in to last answer out, as the server saw it: eval wall minus Inspect's start and end
            calls_span_s=server.calls_span_s(),
            expected_calls=shape.calls(),
            max_in_flight=server.max_in_flight,
            max_in_flight_by_model=dict(server.max_in_flight_by_model),
            ideal_s=shape.ideal_s(latency_s),
        )
    return figures


def report(shape: Shape, runs: list[dict]) -> str:
    lines = [
        f"Inspect AI {runs[0]['inspect_version']}: {shape.dialogues} dialogues x {shape.turns} turns, "
        f"max_connections={shape.max_connections} per model, max_samples={runs[0]['max_samples']}",
        f"{'latency':>8} {'calls':>11} {'process':>8} {'eval wall':>10} {'calls span':>10} {'client CPU':>10} {'ideal':>7} "
        f"{'wall/ideal':>10}  max in flight per model",
    ]
    for r in runs:
        per_model = ", ".join(f"{role} {r['max_in_flight_by_model'].get(m, 0)}" for role, m in MODELS.items())
        ratio = f"{r['eval_wall_s'] / r['ideal_s']:.2f}" if r["ideal_s"] else "-"
        lines.append(
            f"{r['latency_s']:>7.2f}s {r['calls']:>5}/{r['expected_calls']:<5} {r['process_wall_s']:>7.1f}s "
            f"{r['eval_wall_s']:>9.1f}s "
            f"{r['calls_span_s']:>9.1f}s {r['eval_cpu_s']:>9.1f}s {r['ideal_s']:>6.1f}s {ratio:>10}  "
            f"{per_model} (all {r['max_in_flight']})"
        )
        if r["status"] != "success" or r["calls"] != r["expected_calls"]:
            lines.append(f"         eval status {r['status']}: {r['error'] or 'calls differ from the shape'}")
    if len(runs) == 2 and runs[1]["latency_s"] == 0:
        slow, fast = runs
        lines.append(
            f"latency part: {slow['eval_wall_s'] - fast['eval_wall_s']:.1f}s "
            f"(eval wall at {slow['latency_s']}s minus eval wall at 0); "
            f"wall/bound: {slow['eval_wall_s'] / max(slow['ideal_s'], fast['eval_wall_s']):.2f}"
        )
    lines.append(
        "process: the Inspect child process from start to exit (interpreter start and imports included, as in "
        "`eyt bench`'s whole row); eval wall: the eval() call; calls span: first request to last answer at the server; "
        "client CPU: the Inspect process's user+system time during eval()"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="server latency in seconds (then 0)")
    parser.add_argument("--dialogues", type=int, default=130)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--max-connections", type=int, default=32, help="Inspect's per-model connection limit")
    parser.add_argument("--max-samples", type=int, default=0, help="Inspect's sample limit (0: the dialogues)")
    parser.add_argument("--log-dir", default=None, help="keep Inspect's logs here (default: a temporary folder)")
    parser.add_argument("--display", default="none", choices=("none", "plain", "rich", "full", "log", "conversation"))
    parser.add_argument("--no-zero", action="store_true", help="skip the run at latency 0")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return
    shape = Shape(args.dialogues, args.turns, args.max_connections)
    latencies = [args.latency] if args.no_zero or args.latency == 0 else [args.latency, 0.0]
    runs = []
    with tempfile.TemporaryDirectory(prefix="inspect-logs-") as tmp_logs:
        for latency in latencies:
            figures = measure(shape, latency, args, args.log_dir or tmp_logs)
            figures["max_samples"] = args.max_samples or shape.dialogues
            runs.append(figures)
            print(json.dumps(figures), file=sys.stderr, flush=True)
    print(report(shape, runs))
    if args.json:
        Path(args.json).write_text(json.dumps({"shape": asdict(shape), "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
