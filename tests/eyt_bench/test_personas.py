"""Persona pools: schema mapping, errors, deduplication, sampling and the loaders (docs/method.md#persona-pools)."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from eyt_dagster.eyt_bench.personas import (
    NEMOTRON_COLUMNS,
    PersonaSchemaError,
    age_bucket,
    nemotron_to_records,
    occupation_group,
    parse_list,
    personamem_to_records,
)
from eyt_dagster.eyt_bench.sampling import allocate, deduplicate, occupation_age_stratum, sample, stratified_sample
from eyt_dagster.eyt_bench.settings import PoolSource
from eyt_dagster.eyt_bench.types import PersonaRecord
from resources.datasets import persona_sources
from resources.datasets.persona_sources import PersonaSourceError, fixture_path, load_pool, load_pool_records

pytestmark = pytest.mark.unit

NEMOTRON_FILE = fixture_path("nemotron_usa") / "data" / "train-00000-of-00001.parquet"
PERSONAMEM_FILE = fixture_path("personamem_v2") / "benchmark" / "text" / "benchmark.csv"


def nemotron_row(**overrides: object) -> dict[str, object]:
    row: dict[str, object] = {c: "" for c in NEMOTRON_COLUMNS}
    row.update(
        uuid="u1",
        persona="A night-shift nurse who kayaks at dawn.",
        sex="Female",
        age=34,
        occupation="registered_nurse",
        city="Toledo",
        state="OH",
        education_level="bachelors",
        bachelors_field="health",
        marital_status="married_present",
        country="USA",
        hobbies_and_interests_list="['kayaking', 'baking sourdough']",
        skills_and_expertise_list="['triage', 'kayaking']",
    )
    row.update(overrides)
    return row


def personamem_rows() -> pd.DataFrame:
    profile = {
        "short_persona": "A beekeeper who sells honey",
        "name": "Rosa Vale",
        "age": 41,
        "gender": "Female",
        "nationality": "American",
        "personality": {"traits": ["patient"], "hobbies": ["beekeeping", "hiking"]},
        "occupation": {"job_title": "Apiarist", "industry": "Agriculture"},
        "demographics": {"marital_status": "Married"},
    }
    base = {"persona_id": 7, "short_persona": "A beekeeper who sells honey", "expanded_persona": json.dumps(profile)}
    return pd.DataFrame(
        [
            {
                **base,
                "topic_query": "travel",
                "topic_preference": "food_and_cooking",
                "pref_type": "neutral_pref",
                "conversation_scenario": "chat_message",
                "total_tokens_in_chat_history_32k": 29_500,
            },
            {
                **base,
                "topic_query": "pets",
                "topic_preference": "travel",
                "pref_type": "ask_to_forget",
                "conversation_scenario": "personal_email",
                "total_tokens_in_chat_history_32k": 29_500,
            },
            {
                "persona_id": 8,
                "short_persona": "A chess coach",
                "expanded_persona": "not json at all",
                "topic_query": "books",
                "topic_preference": "career",
                "pref_type": "neutral_pref",
                "conversation_scenario": "translation",
                "total_tokens_in_chat_history_32k": 15_000,
            },
        ]
    )


def test_occupation_groups_and_age_buckets() -> None:
    assert occupation_group("registered_nurse") == "healthcare"
    assert occupation_group("nursing_assistant") == "healthcare"
    assert occupation_group("software_developer") == "stem"
    assert occupation_group("sales_manager") == "sales_service"
    assert occupation_group("financial_manager") == "business_finance"
    assert occupation_group("not_in_workforce") == "not_working"
    assert occupation_group("funeral_director") == "other"
    assert occupation_group(None) == "other"
    assert [age_bucket(a) for a in (18, 29, 30, 44, 45, 59, 60, 97)] == [
        "18-29",
        "18-29",
        "30-44",
        "30-44",
        "45-59",
        "45-59",
        "60+",
        "60+",
    ]
    assert age_bucket(None) == "unknown" and age_bucket(float("nan")) == "unknown"


def test_parse_list_is_safe() -> None:
    assert parse_list("['a', ' b ', '']") == ["a", "b"]
    assert parse_list("__import__('os').system('true')") == []
    assert parse_list("not a list") == [] and parse_list(None) == [] and parse_list("{'a': 1}") == []


def test_nemotron_mapping_and_derived_fields() -> None:
    [record] = nemotron_to_records(pd.DataFrame([nemotron_row()]), "local:/data/nemotron")
    assert record.persona_id == "u1" and record.pool == "nemotron_usa" and record.source == "local:/data/nemotron"
    assert record.persona_text == (
        "A night-shift nurse who kayaks at dawn. 34-year-old female registered nurse in Toledo, OH. "
        "Enjoys kayaking, baking sourdough."
    )
    assert record.attributes == {
        "occupation": "registered_nurse",
        "occupation_group": "healthcare",
        "age": 34,
        "age_bucket": "30-44",
        "sex": "Female",
        "state": "OH",
        "city": "Toledo",
        "education_level": "bachelors",
        "bachelors_field": "health",
        "marital_status": "married_present",
    }
    assert record.topic_tags == ["kayaking", "baking sourdough", "triage"]
    assert record.length_bucket == "short"
    assert isinstance(record.attributes["age"], int)


def test_big_five_only_when_present() -> None:
    df = pd.DataFrame([nemotron_row(), nemotron_row(uuid="u2", persona=" ".join(["word"] * 60))])
    df["openness"] = [0.8, None]
    first, second = nemotron_to_records(df, "x")
    assert first.attributes["openness"] == 0.8 and "openness" not in second.attributes
    assert "openness" not in nemotron_to_records(pd.DataFrame([nemotron_row()]), "x")[0].attributes
    assert second.length_bucket == "long"


def test_personamem_aggregates_one_record_per_persona() -> None:
    seven, eight = personamem_to_records(personamem_rows(), "fixture:personamem_v2")
    assert (seven.persona_id, eight.persona_id) == ("7", "8")
    assert seven.persona_text.startswith(
        "A beekeeper who sells honey. Hobbies: beekeeping, hiking. Apiarist; Agriculture."
    )
    assert "Rosa Vale, 41, Female, American." in seven.persona_text
    assert seven.topic_tags == ["food_and_cooking", "pets", "travel"]
    assert seven.length_bucket == "long" and eight.length_bucket == "short"
    assert seven.attributes["pref_types"] == ["ask_to_forget", "neutral_pref"]
    assert seven.attributes["n_queries"] == 2 and seven.attributes["job_title"] == "Apiarist"
    assert eight.persona_text == "A chess coach. not json at all"


def test_missing_column_names_file_and_column() -> None:
    with pytest.raises(PersonaSchemaError) as err:
        nemotron_to_records(pd.DataFrame([nemotron_row()]).drop(columns=["age"]), "/data/train-00003.parquet")
    message = str(err.value)
    assert "/data/train-00003.parquet" in message and "['age']" in message
    assert "Nemotron-Personas-USA" in message and "published layout" in message
    with pytest.raises(PersonaSchemaError, match=r"\['topic_query'\] required by the PersonaMem-v2 schema"):
        personamem_to_records(personamem_rows().drop(columns=["topic_query"]), "b.csv")


def _records(ids: list[str]) -> list[PersonaRecord]:
    return [PersonaRecord(persona_id=i, pool="p", source="s", persona_text=i) for i in ids]


def test_deduplicate_hand_made_embeddings() -> None:
    records = _records(["a", "b", "c", "d"])
    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 2.0], [0.6, 0.8]])  # cos(a,b)=0.994, cos(c,d)=0.8
    result = deduplicate(records, vectors, 0.85)
    assert [r.persona_id for r in result.kept] == ["a", "c", "d"]
    assert result.duplicate_of == {"b": "a"}
    assert deduplicate(records, vectors, 0.75).duplicate_of == {"b": "a", "d": "c"}
    order = [3, 1, 0, 2]  # file order does not matter: visits are in persona_id order
    shuffled = deduplicate([records[i] for i in order], vectors[order], 0.85)
    assert shuffled == result
    with pytest.raises(ValueError, match="3 records but 4 embeddings"):
        deduplicate(records[:3], vectors, 0.85)


@pytest.fixture(scope="module")
def fixture_records() -> dict[str, list[PersonaRecord]]:
    return {pool: load_pool_records(pool, PoolSource())[0] for pool in ("nemotron_usa", "personamem_v2")}


def test_dedup_real_fixture_with_minilm(fixture_records: dict[str, list[PersonaRecord]]) -> None:
    from huggingface_hub import constants

    from resources.text.embeddings import embed

    offline_before = constants.HF_HUB_OFFLINE
    nemotron = fixture_records["nemotron_usa"]
    result = deduplicate(nemotron, embed([r.persona_text for r in nemotron]), 0.85)
    assert constants.HF_HUB_OFFLINE == offline_before  # offline only while the model loads
    assert len(nemotron) == 72 and len(result.kept) == 66 and len(result.duplicate_of) == 6
    by_id = {r.persona_id: r for r in nemotron}
    for dropped, original in result.duplicate_of.items():  # the paraphrase of the same invented person
        for key in ("occupation", "age", "city"):
            assert by_id[dropped].attributes[key] == by_id[original].attributes[key]
    personamem = fixture_records["personamem_v2"]
    result = deduplicate(personamem, embed([r.persona_text for r in personamem]), 0.85)
    assert result.duplicate_of == {"64": "1", "65": "5", "66": "12", "67": "21", "68": "32", "69": "46"}
    assert embed([]).shape == (0, 384)


def test_allocate_largest_remainder() -> None:
    assert allocate({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    assert allocate({"a": 5, "b": 3, "c": 2}, 4) == {"a": 2, "b": 1, "c": 1}  # 2.0, 1.2, 0.8
    assert allocate({"b": 1, "a": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}  # ties by name
    assert sum(allocate({"x": 7, "y": 11, "z": 13}, 17).values()) == 17


def test_stratified_sample_proportions_and_seed(fixture_records: dict[str, list[PersonaRecord]]) -> None:
    records = fixture_records["nemotron_usa"]
    strata = Counter(occupation_age_stratum(r) for r in records)
    assert len(strata) >= 20
    chosen = stratified_sample(records, 30, seed=20260521, strata_key=occupation_age_stratum)
    assert len(chosen) == 30 and len({r.persona_id for r in chosen}) == 30
    assert Counter(occupation_age_stratum(r) for r in chosen) == Counter(allocate(dict(strata), 30))
    again = stratified_sample(list(reversed(records)), 30, seed=20260521, strata_key=occupation_age_stratum)
    assert [r.persona_id for r in again] == [r.persona_id for r in chosen]
    other = stratified_sample(records, 30, seed=7, strata_key=occupation_age_stratum)
    assert {r.persona_id for r in other} != {r.persona_id for r in chosen}
    everything = stratified_sample(records, 500, seed=1, strata_key=occupation_age_stratum)
    assert [r.persona_id for r in everything] == sorted(r.persona_id for r in records)


def test_sample_pool_b(fixture_records: dict[str, list[PersonaRecord]]) -> None:
    records = fixture_records["personamem_v2"]
    picked = sample(records, 25, seed=20260521)
    assert len(picked) == 25 and [r.persona_id for r in picked] == sorted(r.persona_id for r in picked)
    shuffled = records[:]
    random.Random(3).shuffle(shuffled)
    assert sample(shuffled, 25, seed=20260521) == picked
    assert sample(records, 25, seed=1) != picked
    assert len(sample(records, 500, seed=1)) == 70


def test_fixture_files_are_the_real_schema() -> None:
    table = pq.read_table(NEMOTRON_FILE)
    assert list(table.column_names) == list(NEMOTRON_COLUMNS)
    df = table.to_pandas()
    assert len(df) >= 64 and df["age"].dtype == np.int64 and set(df["country"]) == {"USA"}
    assert all(parse_list(v) for v in df["hobbies_and_interests_list"])
    assert df["occupation"].str.fullmatch(r"[a-z]+(_[a-z]+)*").all()
    pm = pd.read_csv(PERSONAMEM_FILE)
    assert pm["persona_id"].nunique() >= 64 and len(pm) > pm["persona_id"].nunique()
    assert "invented" in (NEMOTRON_FILE.parents[2] / "README.md").read_text()


def test_local_layout_reads_all_shards_and_single_files(tmp_path: Path) -> None:
    df = pq.read_table(NEMOTRON_FILE).to_pandas()
    shards = tmp_path / "nemotron" / "data"
    shards.mkdir(parents=True)
    df.iloc[:40].to_parquet(shards / "train-00000-of-00002.parquet", index=False)
    df.iloc[40:].to_parquet(shards / "train-00001-of-00002.parquet", index=False)
    rows, description = load_pool("nemotron_usa", PoolSource(source="local", path=str(tmp_path / "nemotron")))
    assert len(rows) == 72 and description == f"local:{tmp_path / 'nemotron'}"
    single = PoolSource(source="local", path=str(shards / "train-00001-of-00002.parquet"))
    assert len(load_pool("nemotron_usa", single)[0]) == 32

    pm = pd.read_csv(PERSONAMEM_FILE)
    text = tmp_path / "personamem" / "benchmark" / "text"
    text.mkdir(parents=True)
    pm[pm["persona_id"] < 30].to_csv(text / "train.csv", index=False)
    pm[pm["persona_id"] >= 30].to_csv(text / "benchmark.csv", index=False)
    records, _ = load_pool_records("personamem_v2", PoolSource(source="local", path=str(tmp_path / "personamem")))
    assert len(records) == 70


def test_local_file_missing_a_column_names_file_and_column(tmp_path: Path) -> None:
    shards = tmp_path / "data"
    shards.mkdir()
    broken = shards / "train-00000-of-00001.parquet"
    pq.read_table(NEMOTRON_FILE).drop(["zipcode"]).to_pandas().to_parquet(broken, index=False)
    with pytest.raises(PersonaSchemaError) as err:
        load_pool("nemotron_usa", PoolSource(source="local", path=str(tmp_path)))
    assert str(broken) in str(err.value) and "['zipcode']" in str(err.value)
    csv = tmp_path / "one.csv"
    pd.read_csv(PERSONAMEM_FILE).drop(columns=["short_persona"]).to_csv(csv, index=False)
    with pytest.raises(PersonaSchemaError, match=r"one\.csv: missing column\(s\) \['short_persona'\]"):
        load_pool("personamem_v2", PoolSource(source="local", path=str(csv)))


def test_broken_and_absent_files(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    junk = tmp_path / "data" / "train-00000-of-00001.parquet"
    junk.write_bytes(b"this is not parquet")
    with pytest.raises(PersonaSourceError, match=f"persona file {junk} could not be read as parquet"):
        load_pool("nemotron_usa", PoolSource(source="local", path=str(tmp_path)))
    with pytest.raises(PersonaSourceError, match=r"no PersonaMem-v2 CSV under .*benchmark/text/train\.csv"):
        load_pool("personamem_v2", PoolSource(source="local", path=str(tmp_path)))
    with pytest.raises(PersonaSourceError, match="does not exist"):
        load_pool("nemotron_usa", PoolSource(source="local", path=str(tmp_path / "nowhere")))


def test_hub_downloads_only_the_layout_then_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []

    def fake_download(**kwargs: object) -> str:
        calls.append(kwargs)
        shutil.copytree(fixture_path("nemotron_usa"), tmp_path / "snap")
        return str(tmp_path / "snap")

    monkeypatch.setattr(persona_sources, "_snapshot_download", fake_download)
    rows, description = load_pool("nemotron_usa", PoolSource(source="hub", revision="abc123"))
    assert len(rows) == 72 and description == "hub:nvidia/Nemotron-Personas-USA@abc123"
    assert calls == [
        {
            "repo_id": "nvidia/Nemotron-Personas-USA",
            "repo_type": "dataset",
            "revision": "abc123",
            "allow_patterns": ["data/train-*.parquet"],
        }
    ]


def test_unreachable_hub_says_to_use_a_local_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(**_: object) -> str:
        raise ConnectionError("no route to host")

    monkeypatch.setattr(persona_sources, "_snapshot_download", offline)
    with pytest.raises(PersonaSourceError) as err:
        load_pool("personamem_v2", PoolSource(source="hub"))
    message = str(err.value)
    assert "hub was not reachable" in message and "bowen-upenn/PersonaMem-v2" in message
    assert "source: local" in message and "no route to host" in message


def test_draw_pool_drops_near_duplicates_before_sampling():
    records = [
        PersonaRecord(persona_id=f"p{i:02d}", pool="personamem_v2", source="t", persona_text=f"text {i}")
        for i in range(12)
    ]

    def fake_embed(texts):
        # p00 and p01 point the same way (a near-duplicate pair); all others are orthogonal
        vectors = np.eye(len(texts))
        ids = [int(t.split()[1]) for t in texts]
        if 0 in ids and 1 in ids:
            vectors[ids.index(1)] = vectors[ids.index(0)]
        return vectors

    from eyt_dagster.eyt_bench.sampling import draw_pool

    chosen, dedup = draw_pool(records, 20, seed=7, threshold=0.85, embed=fake_embed, stratified=False)
    assert dedup.duplicate_of == {"p01": "p00"}
    assert [r.persona_id for r in chosen] == [f"p{i:02d}" for i in range(12) if i != 1]
    smaller, _ = draw_pool(records, 5, seed=7, threshold=0.85, embed=fake_embed, stratified=False)
    assert (
        len(smaller) == 5
        and smaller == draw_pool(records, 5, seed=7, threshold=0.85, embed=fake_embed, stratified=False)[0]
    )
