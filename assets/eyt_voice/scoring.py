"""The spoken EYT-Bench's verdicts and per-dialogue scores, for both modes (`voice`: the heard dialogues; `text`:
the text control). The judge scores the transcript exactly as in EYT-Bench: the simulator's words and the
target's replies (docs/spoken-eyt.md#judging)."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, stats_metadata, table_of, table_output
from assets._progress import PROGRESS_EVERY, step_progress
from assets.eyt_bench.partitions import JUDGE_POOL, by_pool
from assets.eyt_voice.partitions import VOICE_CELL
from eyt_dagster.eyt_bench.dialogue_scoring import score_dialogues
from eyt_dagster.eyt_bench.intent_similarity import intent_similarities
from eyt_dagster.eyt_bench.judging import (
    FINAL_CODE_HASH,
    TURN_CODE_HASH,
    finished_dialogues,
    judge_stats,
    run_judges,
    verdict_calls,
    verdict_prompt_hash,
)
from eyt_dagster.eyt_voice.table_contracts import MODES, conform_voice
from resources.models.model_access import EmbeddingAccess, ModelAccess, SlateAccess
from resources.roles.eyt_roles import EytRoles

LOGIC_VERSION = "1"
_TURNS = {"voiced_turns": AssetIn(key=["voice", "voiced_turns"]), "text_turns": AssetIn(key=["voice", "text_turns"])}
_SEEDS = {"chat_seeds": AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool)}


def _modes(voiced_turns: pd.DataFrame, text_turns: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return dict(zip(MODES, (voiced_turns, text_turns)))


def _judged(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    modes: dict[str, pd.DataFrame],
    chat_seeds: pd.DataFrame,
    *,
    final: bool,
) -> pd.DataFrame:
    pool = context.partition_key.keys_by_dimension["pool"]
    what = "final verdicts" if final else "turn verdicts"
    dialogues = {mode: finished_dialogues(turns, chat_seeds) for mode, turns in modes.items()}
    calls = {mode: verdict_calls(len(slate.slate.judges), found, final=final) for mode, found in dialogues.items()}
    total = sum(calls.values())
    # one count over both modes (the voiced dialogues' verdicts, then the text control's), there before the judges
    # are built
    progress = step_progress(
        context,
        models.data_dir,
        what,
        lambda done, of: f"{what} of {' and '.join(modes)}: {done} of {of} done",
        every=PROGRESS_EVERY * (1 if final else 10),
        total=total,
    )
    frames = []
    with progress as on_done:
        roles = EytRoles(slate.slate, models)
        judges, prompt = roles.judges(context.run_id, pool=pool), verdict_prompt_hash(final, roles.judge_language(pool))
        before = 0  # the verdicts of the modes judged already
        for mode, found in dialogues.items():

            def counted(done: int, _: int, before: int = before) -> None:
                on_done(before + done, total)

            df = run_judges(slate.slate, judges, found, final=final, prompt=prompt, on_done=counted)
            df["mode"] = mode
            frames.append(df)
            before += calls[mode]
    df = pd.concat(frames, ignore_index=True)
    df["created_at"] = now_utc()
    failed = int(df["error"].notna().sum()) if len(df) else 0
    if failed:
        context.log.warning(
            f"{failed} of {len(df)} {what} failed in {context.partition_key}; see {table_of(context)}.error (rerun "
            "the partition to retry them: finished calls come from the call cache)"
        )
    return df


@asset(**VOICE_CELL, ins={**_TURNS, **_SEEDS}, code_version=f"{LOGIC_VERSION}-{TURN_CODE_HASH}", pool=JUDGE_POOL)
def judge_verdicts(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    voiced_turns: pd.DataFrame,
    text_turns: pd.DataFrame,
    chat_seeds: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Each judge's 15 sub-indicators for every turn of both modes (EYT-Bench's judge on the transcript)."""
    df = _judged(context, slate, models, _modes(voiced_turns, text_turns), chat_seeds, final=False)
    return table_output(conform_voice(df, table_of(context)), **stats_metadata("judge", judge_stats(df)))


@asset(**VOICE_CELL, ins={**_TURNS, **_SEEDS}, code_version=f"{LOGIC_VERSION}-{FINAL_CODE_HASH}", pool=JUDGE_POOL)
def final_intent_verdicts(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    voiced_turns: pd.DataFrame,
    text_turns: pd.DataFrame,
    chat_seeds: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Each judge's final-intent verdict and satisfaction on every dialogue of both modes."""
    df = _judged(context, slate, models, _modes(voiced_turns, text_turns), chat_seeds, final=True)
    return table_output(conform_voice(df, table_of(context)), **stats_metadata("judge", judge_stats(df)))


@asset(
    **VOICE_CELL,
    ins={
        **_TURNS,
        **_SEEDS,
        "judge_verdicts": AssetIn(key=["voice", "judge_verdicts"]),
        "final_intent_verdicts": AssetIn(key=["voice", "final_intent_verdicts"]),
    },
    code_version=LOGIC_VERSION,
)
def dialogue_scores(
    context: AssetExecutionContext,
    slate: SlateAccess,
    embeddings: EmbeddingAccess,
    voiced_turns: pd.DataFrame,
    text_turns: pd.DataFrame,
    chat_seeds: pd.DataFrame,
    judge_verdicts: pd.DataFrame,
    final_intent_verdicts: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """EYT-Bench's per-dialogue metrics for both modes (intent similarity computed here with the pool's encoder,
    drift on its calibrated scale, as in EYT-Bench)."""
    current = slate.slate
    pool = context.partition_key.keys_by_dimension["pool"]
    embed = embeddings.early_embeddings(current.pool_embedding_model(pool)).embed
    calibration = current.pool_calibration(pool)
    frames = []
    for mode, turns in _modes(voiced_turns, text_turns).items():
        similarity, _ = intent_similarities(turns, chat_seeds, embed)
        verdicts = judge_verdicts[judge_verdicts["mode"] == mode]
        finals = final_intent_verdicts[final_intent_verdicts["mode"] == mode]
        scores = score_dialogues(turns, verdicts, finals, similarity, current.alpha, current.judge_combine, calibration)
        scores["mode"] = mode
        frames.append(scores)
    df = pd.concat(frames, ignore_index=True)
    df["alpha"], df["judge_combine"], df["created_at"] = current.alpha, current.judge_combine, now_utc()
    counts = df.groupby("mode").size().to_dict() if len(df) else {}
    return table_output(
        conform_voice(df, table_of(context)), **{f"{mode}_dialogues": int(counts.get(mode, 0)) for mode in MODES}
    )
