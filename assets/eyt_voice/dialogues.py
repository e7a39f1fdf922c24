"""voiced_turns and text_turns: a voice target's dialogues on the pool's first ChatSEEDs, heard (every user turn
voiced) and read (the text control, EYT-Bench's own loop through the same model)."""

from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Failure, Output, asset

from assets._output import now_utc, stats_metadata, table_of, table_output
from assets._progress import step_progress
from assets.eyt_bench.partitions import by_pool
from assets.eyt_voice.partitions import VOICE_CELL, VOICE_POOL
from eyt_dagster.core.replies import CallStats
from eyt_dagster.eyt_bench.dialogue_loop import DialogueResult
from eyt_dagster.eyt_bench.dialogue_turns import dialogue_workers, play_cell
from eyt_dagster.eyt_bench.prompts import code_version_hash, prompt_hash
from eyt_dagster.eyt_bench.table_rows import TURN_COLUMNS, stat_column_names
from eyt_dagster.eyt_voice.audio_listener import audio_code_hash
from eyt_dagster.eyt_voice.prosody_probe import probe, probed_turns
from eyt_dagster.eyt_voice.sampling import seed_voices, voice_seeds
from eyt_dagster.eyt_voice.table_contracts import conform_voice
from eyt_dagster.eyt_voice.table_rows import CLIP_COLUMNS, voiced_rows
from eyt_dagster.eyt_voice.voiced_loop import run_voiced_dialogues
from eyt_dagster.eyt_voice.voicing import EMOTION_VOICE
from eyt_dagster.slate import Slate
from eyt_dagster.slate_settings import fingerprint
from resources.models.model_access import ModelAccess, SlateAccess
from resources.roles.voice_roles import VoiceRoles

LOGIC_VERSION = "1"
PROMPT_KEYS = ("simulator", "perception", "target")
PROMPT_HASH = code_version_hash(*PROMPT_KEYS)  # every language's prompts: editing one marks the cells stale
AUDIO_PROMPT_HASH = audio_code_hash()  # what an audio target is asked in perception (eyt_voice/audio_listener.py)
VOICING_VERSION = fingerprint(EMOTION_VOICE)  # a changed tone of an emotion changes the clips
_INS = {
    "chat_seeds": AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool),
    "persona_pool": AssetIn(key=["dialogue", "persona_pool"], partition_mapping=by_pool),
}


def _cell(context: AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension
    return keys["target"], keys["pool"]


def _heard_pool(context: AssetExecutionContext, slate: Slate) -> str:
    """The cell's pool, which its voice target must be able to hear: a cascade whose recogniser writes English
    only fails at once on a pool played in another language, saying so, instead of mishearing every turn."""
    target_id, pool = _cell(context)
    if pool not in slate.voice_pools_of(target_id):
        raise Failure(
            f"voice target '{target_id}': its recogniser (asr_model_path "
            f"'{slate.target(target_id).cascade.asr_model_path}') writes English only, and pool '{pool}' is played "
            f"in '{slate.pool_language(pool)}'; set asr_model_path to a multilingual Whisper folder, or leave it "
            "unset for the reference transcripts. `eyt run`, `eyt refresh` and the automation leave such cells out "
            "(docs/spoken-eyt.md#in-chinese)"
        )
    return pool


def _provenance(df: pd.DataFrame, slate: SlateAccess, target_id: str, pool: str) -> pd.DataFrame:
    current = slate.slate
    df["simulator"] = current.simulator.id
    df["target_model"] = current.target(target_id).model
    df["prompt_hash"] = prompt_hash(*PROMPT_KEYS, language=current.pool_language(pool))
    df["slate_seed"] = current.seed
    df["created_at"] = now_utc()
    return df


def audio_seconds(df: pd.DataFrame, listener: object) -> dict[str, object]:
    """Seconds of audio in the cell: what the target heard (`audio_seconds`, clip_duration_s summed over the
    answered turns; an audio target hears each turn's clip in both calls), and for a cascade what its speech
    recognition read (`asr_seconds`, each distinct clip once, transcribed now or found in the clip analysis store)
    with the store's counts (`clip_analyses`: per analysis, clips computed in this step and reused)."""
    clips = df[df["turn"] > 0]
    out: dict[str, object] = {"audio_seconds": round(float(clips["clip_duration_s"].sum()), 3)}
    counts = getattr(listener, "clip_analyses", None)
    if counts is not None:
        distinct = clips.drop_duplicates("clip_sha256")
        out["asr_seconds"] = round(float(distinct["clip_duration_s"].sum()), 3)
        out["clip_analyses"] = {name: dict(c) for name, c in counts().items()}
    return out


def _unfinished(context: AssetExecutionContext, results: list[DialogueResult], what: str) -> int:
    failed = [r for r in results if r.error]
    if failed:
        first = failed[0]
        context.log.warning(
            f"{len(failed)} of {len(results)} {what} of {context.partition_key} are unfinished (first: "
            f"{first.seed.seed_id}: {(first.error or '')[:300]}); they are left out of every metric. Rerun the "
            "partition to finish them: answered calls come from the call cache, clips from the clip index."
        )
    return len(failed)


@asset(
    **VOICE_CELL,
    ins=_INS,
    code_version=f"{LOGIC_VERSION}-{PROMPT_HASH}-{AUDIO_PROMPT_HASH}-{VOICING_VERSION}",
    pool=VOICE_POOL,
)
def voiced_turns(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    chat_seeds: pd.DataFrame,
    persona_pool: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Every sampled ChatSEED played with each user turn voiced in its gold emotion's tone, one row per turn."""
    target_id, _ = _cell(context)
    current = slate.slate
    pool = _heard_pool(context, current)
    seeds = voice_seeds(chat_seeds, current.voice.dialogues_per_pool)
    ref = current.target(target_id)
    progress = step_progress(
        context,
        models.data_dir,
        "dialogues",
        lambda done, total: f"voiced dialogues done: {done} of {total} ({target_id})",
        total=len(seeds),
    )
    with progress as on_done:  # the count is there before the voice and the listener are loaded
        roles = VoiceRoles(current, models)
        voices = seed_voices(seeds, persona_pool, current.seed)
        voicer = roles.voicer(pool)
        listener = roles.listener(target_id, context.run_id, pool)
        voiced = run_voiced_dialogues(
            seeds,
            roles.simulator(context.run_id, pool),
            listener,
            voicer,
            voices,
            current.t_max,
            max_workers=dialogue_workers(ref, current.simulator),
            on_done=on_done,
        )
    data = Path(models.data_dir)
    language = current.pool_language(pool)
    rows = [
        row
        for v in voiced
        for row in voiced_rows(
            v, target_id, voices[v.result.seed.seed_id], lambda p: str(Path(p).relative_to(data)), language
        )
    ]
    df = pd.DataFrame(rows, columns=[*TURN_COLUMNS, *stat_column_names("target_", "simulator_"), *CLIP_COLUMNS])
    unfinished = _unfinished(context, [v.result for v in voiced], "voiced dialogues")
    turns = [t for v in voiced for t in v.result.turns]
    context.log.info(f"clips: {voicer.synthesised} synthesised, {voicer.reused} reused")
    audio = audio_seconds(df, listener)
    return table_output(
        conform_voice(_provenance(df, slate, target_id, pool), table_of(context)),
        dialogues=len(voiced),
        unfinished_dialogues=unfinished,
        clips_synthesised=voicer.synthesised,
        clips_reused=voicer.reused,
        tts=str(voicer.identity["name"]),
        tts_seconds=round(voicer.synthesised_s, 3),
        **audio,
        **stats_metadata("target", sum((t.target_stats for t in turns), CallStats())),
        **stats_metadata("simulator", sum((t.simulator_stats for t in turns), CallStats())),
    )


@asset(
    **VOICE_CELL, ins={"chat_seeds": _INS["chat_seeds"]}, code_version=f"{LOGIC_VERSION}-{PROMPT_HASH}", pool=VOICE_POOL
)
def text_turns(
    context: AssetExecutionContext, slate: SlateAccess, models: ModelAccess, chat_seeds: pd.DataFrame
) -> Output[pd.DataFrame]:
    """The text control: the same ChatSEEDs and model, read as in EYT-Bench (its calls are EYT-Bench's own when
    the model is also an EYT-Bench target, so they come from the call cache)."""
    target_id, pool = _cell(context)
    current = slate.slate
    roles = VoiceRoles(current, models)
    _heard_pool(context, current)
    seeds = voice_seeds(chat_seeds, current.voice.dialogues_per_pool)
    sample = chat_seeds[chat_seeds["seed_id"].isin({s.seed_id for s in seeds})]
    progress = step_progress(
        context,
        models.data_dir,
        "dialogues",
        lambda done, total: f"text-control dialogues done: {done} of {total}",
        total=len(seeds),
    )
    with progress as on_done:
        cell = play_cell(
            sample,
            roles.simulator(context.run_id, pool),
            roles.text_control(target_id, context.run_id, pool),
            target_ref=current.target(target_id),
            simulator_ref=current.simulator,
            pool=pool,
            cell=str(context.partition_key),
            t_max=current.t_max,
            prompt_hash=prompt_hash(*PROMPT_KEYS, language=current.pool_language(pool)),
            slate_seed=current.seed,
            on_done=on_done,
        )
    unfinished = _unfinished(context, cell.results, "text-control dialogues")
    df = cell.rows
    df["created_at"] = now_utc()
    return table_output(
        conform_voice(df, table_of(context)),
        dialogues=len(cell.results),
        unfinished_dialogues=unfinished,
        **stats_metadata("target", cell.target_stats),
        **stats_metadata("simulator", cell.simulator_stats),
    )


@asset(
    **VOICE_CELL,
    ins={**_INS, "voiced_turns": AssetIn(key=["voice", "voiced_turns"])},
    code_version=f"{LOGIC_VERSION}-{PROMPT_HASH}-{AUDIO_PROMPT_HASH}-{VOICING_VERSION}",
    pool=VOICE_POOL,
)
def prosody_probe(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    chat_seeds: pd.DataFrame,
    persona_pool: pd.DataFrame,
    voiced_turns: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Every non-neutral voiced turn perceived again with the same words in the plain voice (docs/spoken-eyt.md)."""
    target_id, _ = _cell(context)
    current = slate.slate
    pool = _heard_pool(context, current)
    data = Path(models.data_dir)
    progress = step_progress(
        context,
        models.data_dir,
        "turns",
        lambda done, total: f"prosody probe: {done} of {total} turns",
        total=probed_turns(voiced_turns),
    )
    with progress as on_done:  # the count is there before the voice and the listener are loaded
        roles = VoiceRoles(current, models)
        voices = seed_voices(voice_seeds(chat_seeds, current.voice.dialogues_per_pool), persona_pool, current.seed)
        voicer = roles.voicer(pool)
        df = probe(
            voiced_turns,
            voices,
            roles.listener(target_id, context.run_id, pool),
            voicer,
            lambda p: str(data / p),
            workers=current.target(target_id).max_concurrency,
            on_done=on_done,
        )
    df["plain_clip_path"] = df["plain_clip_path"].map(
        lambda p: str(Path(p).relative_to(data)) if isinstance(p, str) else None
    )
    df["created_at"] = now_utc()
    failed = int(df["error"].notna().sum()) if len(df) else 0
    if failed:
        context.log.warning(f"{failed} of {len(df)} probe perceptions failed; rerun the partition to retry them")
    return table_output(
        conform_voice(df, table_of(context)),
        turns=len(df),
        failed=failed,
        clips_synthesised=voicer.synthesised,
        clips_reused=voicer.reused,
    )
