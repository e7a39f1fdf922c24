"""The slate as a tracked input: editing a setting under the same ids makes exactly the partitions that read it
stale, with the setting named, and settings that do not change answers make nothing stale.

One small graph (two embedded targets, one pool) is materialised once in process; each case writes an edited copy
of its slate, builds the code location's definitions from that copy in process and asks `eyt refresh --dry-run`'s function what
it would run (no run is launched), then puts the recorded settings back."""

import re
from pathlib import Path

import pytest
import yaml
from dagster import AssetSelection, DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
from eyt_dagster import slate_settings as ss
from eyt_dagster.core.storage_types import SETTINGS_KEY
from eyt_dagster.definitions import assets_for, build_defs
from eyt_dagster.jobs import DIALOGUE_ASSETS, POOL_ASSETS
from eyt_dagster.ops.refresh import refresh, slate_keys
from eyt_dagster.settings_sources import record_settings
from eyt_dagster.slate import default_slate_path, load_slate

from support.pipeline import resources_for
from support.slates import write_slate

ROOT = Path(__file__).resolve().parents[1]
POOL = "nemotron_usa"
A, B = "reflective-baseline", "terse-baseline"
CELL_A, CELL_B = f"{POOL}|{A}", f"{POOL}|{B}"
CELLS = (CELL_A, CELL_B)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """(directory, slate path, instance) after materialising the pool, both cells and the leaderboard."""
    directory = tmp_path_factory.mktemp("settings")
    default = {t["id"]: t for t in yaml.safe_load(default_slate_path().read_text())["targets"]}
    path = write_slate(
        directory,
        targets=[default[A], default[B]],
        dialogues_per_pool=2,
        t_max=3,
        pool_size=8,
        pools={POOL: {"source": "fixture"}},
    )
    (directory / "data").mkdir()
    slate = load_slate(path)
    (directory / "dagster_home").mkdir()
    instance = DagsterInstance.from_config(str(directory / "dagster_home"))  # on disk: the workspace needs a ref
    instance.add_dynamic_partitions(TARGETS_PARTITION, [A, B])
    assets, resources = assets_for(slate), resources_for(path, directory / "data")
    materialize(assets, selection=POOL_ASSETS, partition_key=POOL, resources=resources, instance=instance)
    for target in (A, B):
        materialize(
            assets,
            selection=DIALOGUE_ASSETS,
            partition_key=str(target_pool_key(target, POOL)),
            resources=resources,
            instance=instance,
        )
    materialize(
        assets, selection=AssetSelection.assets(["dialogue", "leaderboard"]), resources=resources, instance=instance
    )
    yield directory, path, instance
    instance.dispose()


def dry_run(world, capsys, name, edit):
    """{(asset, partition): (status, causes)} that `eyt refresh --dry-run` lists for the slate after `edit`
    (a function of the raw slate mapping), with the recorded settings put back afterwards."""
    directory, path, instance = world
    raw = yaml.safe_load(path.read_text())
    edit(raw)
    edited = directory / f"slate_{name}.yaml"
    edited.write_text(yaml.safe_dump(raw, sort_keys=False))
    slate = load_slate(edited)
    capsys.readouterr()
    try:
        code = refresh(
            instance,
            lambda asset: not asset.startswith("speech/"),
            slate_keys(slate),
            dry_run=True,
            slate=slate,
            defs=build_defs(str(edited)),
        )
    finally:
        record_settings(instance, load_slate(path))
    out = capsys.readouterr().out
    assert code == 0, out
    rows, asset = {}, None
    for line in out.splitlines():
        match = re.match(r"^(\S+)?\s+(\S+)\s+(STALE|MISSING)\s+(.*)$", line)
        if match:
            asset = match.group(1) or asset
            rows[(asset, match.group(2))] = (match.group(3), match.group(4))
    return rows


def own_stale(rows):
    """The partitioned findings whose cause is their own (not 'upstream ... will be re-materialised')."""
    return {
        key: cause
        for key, (status, cause) in rows.items()
        if key[1] != "-" and status == "STALE" and not cause.startswith("upstream ")
    }


def target(field, value):
    def edit(raw):
        raw["targets"][0][field] = value  # targets[0] is A

    return edit


@pytest.mark.materialisation
@pytest.mark.parametrize(
    "field,value",
    [
        ("temperature", 0.7),
        ("max_tokens", 64),
        ("thinking", True),
        ("reasoning_effort", "low"),
        ("extra_body", {"chat_template_kwargs": {"enable_thinking": True}}),
        ("model", "terse"),
        ("base_url", "http://127.0.0.1:9/v1"),
    ],
)
def test_a_target_setting_makes_exactly_that_targets_partitions_stale(world, capsys, field, value):
    rows = dry_run(world, capsys, f"target_{field}", target(field, value))
    stale = own_stale(rows)
    assert list(stale) == [("dialogue/dialogue_turns", CELL_A)], rows
    assert stale[("dialogue/dialogue_turns", CELL_A)].startswith(f"target {A} settings changed: {field}")
    assert {p for (_, p), (status, _) in rows.items() if status == "STALE" and p != "-"} == {CELL_A}  # B is fresh
    upstream = f"upstream dialogue/dialogue_turns[{CELL_A}] will be re-materialised"
    assert rows[("dialogue/judge_verdicts", CELL_A)][1] == upstream


@pytest.mark.materialisation
def test_after_rerunning_the_changed_target_nothing_is_stale(world, capsys):
    """Re-materialising what refresh lists (here in process, as its run would) leaves every partition fresh; the run
    records the new settings itself when it starts. The cell is then rebuilt with the original slate."""
    directory, path, instance = world
    cell = str(target_pool_key(A, POOL))

    def rebuild(slate_path):
        materialize(
            assets_for(load_slate(slate_path)),
            selection=DIALOGUE_ASSETS,
            partition_key=cell,
            resources=resources_for(slate_path, directory / "data"),
            instance=instance,
        )

    edit = target("temperature", 0.9)
    assert own_stale(dry_run(world, capsys, "rerun_before", edit))
    try:
        rebuild(directory / "slate_rerun_before.yaml")
        rows = dry_run(world, capsys, "rerun_after", edit)
        assert not [key for key, (status, _) in rows.items() if status == "STALE" and key[1] != "-"], rows
    finally:
        record_settings(instance, load_slate(path))
        rebuild(path)
    assert not own_stale(dry_run(world, capsys, "rerun_restored", lambda raw: None))


def edit_key(key, value):
    def edit(raw):
        raw[key] = value

    return edit


def edit_role(role, **fields):
    def edit(raw):
        (raw[role][0] if isinstance(raw[role], list) else raw[role]).update(fields)

    return edit


# (case, edit, {(asset, partition): own cause}) for the slate-wide and role-wide settings
WIDE = [
    (
        "simulator",
        edit_role("simulator", temperature=0.3),
        {
            ("dialogue/chat_seeds", POOL): "simulator settings changed: temperature",
            **{
                (a, c): "simulator settings changed: temperature"
                for a in ("dialogue/dialogue_turns", "dialogue/repeat_dialogues")
                for c in CELLS
            },
        },
    ),
    (
        "judges",
        edit_role("judges", temperature=0.2),
        {
            (a, c): "judges settings changed: rubric-judge.temperature"
            for a in ("dialogue/judge_verdicts", "dialogue/final_intent_verdicts", "dialogue/repeat_scores")
            for c in CELLS
        },
    ),
    (
        "t_max",
        edit_key("t_max", 4),
        {
            (a, c): "slate settings changed: t_max"
            for a in ("dialogue/dialogue_turns", "dialogue/repeat_dialogues")
            for c in CELLS
        },
    ),
    (
        "repeats",
        edit_key("repeats", 2),
        {
            (a, c): "slate settings changed: repeats"
            for a in ("dialogue/repeat_dialogues", "dialogue/repeat_scores")
            for c in CELLS
        },
    ),
    (
        "judge_repeats",
        edit_key("judge_repeats", 2),
        {("dialogue/repeat_scores", c): "slate settings changed: judge_repeats" for c in CELLS},
    ),
    (
        "alpha",
        edit_key("alpha", 0.15),
        {
            (a, c): "slate settings changed: alpha"
            for a in ("dialogue/dialogue_scores", "dialogue/repeat_scores")
            for c in CELLS
        },
    ),
    (
        "seed",
        edit_key("seed", 7),
        {
            **{(a, POOL): "slate settings changed: seed" for a in ("dialogue/persona_pool", "dialogue/chat_seeds")},
            **{
                (a, c): "slate settings changed: seed"
                for c in CELLS
                for a in (
                    "dialogue/dialogue_turns",
                    "dialogue/judge_verdicts",
                    "dialogue/final_intent_verdicts",
                    "dialogue/repeat_dialogues",
                    "dialogue/repeat_scores",
                )
            },
        },
    ),
    (
        "judge_combine",
        edit_key("judge_combine", "median"),
        {
            (a, c): "slate settings changed: judge_combine"
            for a in ("dialogue/dialogue_scores", "dialogue/repeat_scores")
            for c in CELLS
        },
    ),
    (
        "dialogues_per_pool",
        edit_key("dialogues_per_pool", 3),
        {("dialogue/chat_seeds", POOL): "slate settings changed: dialogues_per_pool"},
    ),
    (
        "pool source",
        lambda raw: raw["pools"][POOL].update(revision="v2"),
        {("dialogue/persona_pool", POOL): f"pool {POOL} settings changed: revision"},
    ),
]


@pytest.mark.materialisation
@pytest.mark.parametrize("case,edit,expected", WIDE, ids=[c[0] for c in WIDE])
def test_a_slate_wide_setting_makes_the_partitions_that_read_it_stale(world, capsys, case, edit, expected):
    rows = dry_run(world, capsys, case.replace(" ", "_"), edit)
    assert own_stale(rows) == expected
    # every other stale partition only lies downstream (own_stale); the reports may read the setting themselves


@pytest.mark.materialisation
def test_the_leaderboard_names_alpha_as_its_own_cause(world, capsys):
    rows = dry_run(world, capsys, "alpha_board", edit_key("alpha", 0.05))
    assert rows[("dialogue/leaderboard", "-")] == ("STALE", "slate settings changed: alpha")


@pytest.mark.materialisation
def test_settings_that_do_not_change_answers_make_nothing_stale(world, capsys):
    def edit(raw):
        for ref in (raw["targets"][0], raw["targets"][1], raw["simulator"], *raw["judges"]):
            ref.update(max_concurrency=9, timeout_s=5.0, max_retries=0, api_key_env="SOME_KEY_VARIABLE")
        raw["targets"][0]["family"] = "another-family"

    rows = dry_run(world, capsys, "transport", edit)
    assert not [key for key, (status, _) in rows.items() if status == "STALE" and key[1] != "-"], rows


@pytest.mark.materialisation
def test_unchanged_slate_leaves_every_materialised_partition_fresh(world, capsys):
    rows = dry_run(world, capsys, "same", lambda raw: None)
    assert {status for status, _ in rows.values()} == {"MISSING"}  # only the reports never materialised here
    assert all(p == "-" for _, p in rows)


@pytest.mark.unit
def test_every_slate_field_is_read_by_an_asset_or_declared_unread():
    """A new slate field must be placed: read by some asset (slate_settings.READERS) or declared in NOT_READ."""
    from eyt_dagster.core.model_ref import NOT_ANSWER_FIELDS
    from eyt_dagster.eyt_voice.settings import VoiceSettings
    from eyt_dagster.slate import Slate, TargetRef
    from eyt_dagster.speech_eq.settings import SpeechSettings

    fields = (set(Slate.model_fields) - {"speech", "voice"}) | {f"speech.{f}" for f in SpeechSettings.model_fields}
    fields |= {f"voice.{f}" for f in VoiceSettings.model_fields}
    assert fields <= set(ss.READERS) | ss.NOT_READ, sorted(fields - set(ss.READERS) - ss.NOT_READ)
    assert NOT_ANSWER_FIELDS <= set(TargetRef.model_fields)  # no misspelt field


@pytest.mark.unit
def test_speech_target_settings_cover_how_it_hears_but_not_transport():
    slate = load_slate(default_slate_path())
    ref = slate.target("acoustic-chooser-baseline")
    base = ss.fingerprint(ss.speech_target_settings(ref))
    assert ss.fingerprint(ss.speech_target_settings(ref.model_copy(update={"max_concurrency": 1}))) == base
    assert ss.fingerprint(ss.speech_target_settings(ref.model_copy(update={"audio_format": "mp3"}))) != base
    cascade = ref.cascade.model_copy(update={"cues": "emo_num"})
    assert ss.fingerprint(ss.speech_target_settings(ref.model_copy(update={"cascade": cascade}))) != base


@pytest.mark.unit
def test_change_text_names_fields_by_setting_and_judges_by_id():
    old = {
        "t_max": 10,
        "simulator": {"id": "s", "temperature": 0.0},
        "judges": [{"id": "j1", "model": "a"}],
        "speech.evaluation": {"both_orders": False},
    }
    new = {
        "t_max": 8,
        "simulator": {"id": "s", "temperature": 0.5},
        "judges": [{"id": "j1", "model": "b"}, {"id": "j2", "model": "c"}],
        "speech.evaluation": {"both_orders": True},
    }
    assert ss.change_text(old, new) == (
        "slate settings changed: t_max; judges settings changed: j1.model, "
        "j2 (added); simulator settings changed: temperature; "
        "speech.evaluation settings changed: both_orders"
    )
    assert ss.change_text(old, old) == ""


@pytest.mark.materialisation
def test_observing_the_target_settings_records_every_slate_target_with_its_settings(tmp_path):
    """What the UI's "Observe" does on dialogue/target_settings (no partition chosen): one observation per
    slate target, data version = the hash of its settings, the settings as metadata."""
    from dagster import AssetKey, AssetRecordsFilter

    from eyt_dagster.definitions import ASSETS

    (tmp_path / "data").mkdir()
    path = write_slate(tmp_path)
    instance = DagsterInstance.ephemeral()
    key = AssetKey(["dialogue", "target_settings"])
    result = materialize(
        ASSETS,
        selection=AssetSelection.assets(key),
        resources=resources_for(path, tmp_path / "data"),
        instance=instance,
    )
    records = instance.fetch_observations(AssetRecordsFilter(asset_key=key), limit=50).records
    in_run = {r.partition_key: r for r in records if r.run_id == result.run_id}
    slate = load_slate(path)
    assert set(in_run) == {t.id for t in slate.eyt_targets}
    for ref in slate.eyt_targets:
        observed = in_run[ref.id].asset_observation
        assert observed.tags["dagster/data_version"] == ss.fingerprint(ss.eyt_target_settings(ref))
        assert observed.metadata[SETTINGS_KEY].value == ss.eyt_target_settings(ref)
        assert "max_concurrency" not in observed.metadata[SETTINGS_KEY].value


@pytest.mark.materialisation
def test_imported_labels_make_human_annotations_stale_and_none_leave_it_fresh(world, capsys, monkeypatch):
    """The label store of the data directory (`eyt annotate import`) is a setting of dialogue/human_annotations:
    a file in it makes the asset stale, naming human_labels; with none the asset stays fresh."""
    import pandas as pd

    from eyt_dagster.eyt_bench.annotation_import import LABEL_COLUMNS
    from resources.storage import annotation_labels

    directory, path, instance = world
    data = directory / "data"
    monkeypatch.setenv("EYT_DATA_DIR", str(data))  # where the code location looks for the store
    asset = AssetSelection.assets(["dialogue", "human_annotations"])
    materialize(assets_for(load_slate(path)), selection=asset, resources=resources_for(path, data), instance=instance)
    assert ("dialogue/human_annotations", "-") not in dry_run(world, capsys, "no_labels", lambda raw: None)

    label = dict(zip(LABEL_COLUMNS, ["ann1", A, POOL, f"{POOL}:x", 1, "empathy", 3.0, "s1-00000000", "f.csv"]))
    written = annotation_labels.add_labels(data, pd.DataFrame([label]), "s1-00000000")
    try:
        rows = dry_run(world, capsys, "labels", lambda raw: None)
    finally:
        written.unlink()
    status, causes = rows[("dialogue/human_annotations", "-")]
    assert status == "STALE" and "human_labels" in causes, rows
