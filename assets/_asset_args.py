"""The @asset keyword arguments the assets of one module (or one partitioning) share, as TypedDicts: splatted as a
plain `dict[str, Any]` they would let both of @asset's overloads match, and the decorated function lose its type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from dagster import PartitionsDefinition


class AssetPlace(TypedDict, total=False):
    """Where an asset sits (key prefix, group) and how it is partitioned; its code version is given per asset."""

    key_prefix: list[str]
    group_name: str
    partitions_def: PartitionsDefinition[Any]
    metadata: Mapping[str, Any]


class AssetArgs(AssetPlace, total=False):
    """AssetPlace with the code version the module's assets share."""

    code_version: str
