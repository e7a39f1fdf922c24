"""Value constraints for the dagster-pandas frame types of both benchmarks' table contracts, beyond those
dagster-pandas ships."""

from __future__ import annotations

import pandas as pd
from dagster_pandas.constraints import ColumnConstraint, ColumnConstraintViolationException


class InSetColumnConstraint(ColumnConstraint):
    """Every non-missing value is one of `allowed` (for numeric sets, which categorical columns can't do)."""

    def __init__(self, allowed: list[float]) -> None:
        self.allowed = allowed
        super().__init__(  # type: ignore[no-untyped-call]  # dagster-pandas ships no types
            markdown_description=f"values in {allowed}", error_description=f"values must be one of {allowed}"
        )

    def validate(self, dataframe: pd.DataFrame, column_name: str) -> None:
        column = dataframe[column_name]
        bad = dataframe[column.notna() & ~column.isin(self.allowed)]
        if not bad.empty:
            raise ColumnConstraintViolationException(
                constraint_name=self.name,
                constraint_description=self.error_description,
                column_name=column_name,
                offending_rows=bad,
            )
