"""The report's section on the simulator audit's model check: per target x pool, how many turns the slate's audit
model checked, how many of its calls failed, and how many dialogues it flagged (leak, role flip, and those no
deterministic check had flagged). Absent when no turn was put to a model."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.eyt_bench.simulator_audit import FLAGS, MODEL_FLAGS
from eyt_dagster.reporting.html_report import Section

_DETERMINISTIC = [f for f in FLAGS if f not in MODEL_FLAGS]


def audit_model_table(audit: pd.DataFrame) -> pd.DataFrame:
    """One row per target x pool whose turns went to an audit model (no rows when none did)."""
    columns = ["target", "pool", "audit_model", "turns_checked", "failed_calls", "dialogues"]
    columns += [f"dialogues_{f}" for f in MODEL_FLAGS] + ["dialogues_model_only"]
    if not len(audit) or "audit_model" not in audit.columns or audit["audit_model"].isna().all():
        return pd.DataFrame(columns=columns)
    df = audit.copy()
    for flag in (*_DETERMINISTIC, *MODEL_FLAGS):
        df[flag] = df[flag].astype("boolean").fillna(False).astype(bool)
    per_dialogue = df.groupby(["target", "pool", "seed_id"]).agg(
        **{f: (f, "any") for f in (*_DETERMINISTIC, *MODEL_FLAGS)}
    )
    per_dialogue["model_only"] = per_dialogue[list(MODEL_FLAGS)].any(axis=1) & ~per_dialogue[_DETERMINISTIC].any(axis=1)
    dialogues = per_dialogue.groupby(["target", "pool"]).agg(
        dialogues=("model_only", "size"), **{f"dialogues_{f}": (f, "sum") for f in (*MODEL_FLAGS, "model_only")}
    )
    df["answered"] = df["audit_model"].notna() & df["model_error"].isna()
    df["failed"] = df["model_error"].notna()
    turns = df.groupby(["target", "pool"]).agg(
        audit_model=("audit_model", lambda s: ", ".join(sorted(set(s.dropna().astype(str))))),
        turns_checked=("answered", "sum"),
        failed_calls=("failed", "sum"),
    )
    table = turns.join(dialogues).reset_index()
    table = table[table["audit_model"] != ""]
    return table[columns].reset_index(drop=True)


def audit_model_section(audit: pd.DataFrame) -> Section | None:
    table = audit_model_table(audit)
    if not len(table):
        return None
    return Section(
        title="Simulator audit: the audit model's flags",
        description="The slate's simulator audit model read every simulator turn of the finished dialogues (the "
        "hidden latent intent, the assistant's previous reply, the utterance) and said whether the turn states the "
        "intent (model_leak) or talks as the assistant (model_role_flip). Per target and pool: the turns it "
        "answered, its failed calls (their turns count as unflagged until a rerun), and the dialogues it flagged; "
        "dialogues_model_only counts those no deterministic check had flagged. Its flags count in the audit's "
        "`flagged`, so in the with-and-without table above.",
        table=table,
    )
