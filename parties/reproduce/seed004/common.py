"""Formatting and error-selection helpers shared by the seed-004 report modules."""

from __future__ import annotations

from typing import Any


def err_of(row: dict[str, Any]) -> float | None:
    """The error used in comparisons: the exact expected RMSE where known, else the measured."""
    if row.get("status") != "ok":
        return None
    return row["expected_rmse"] if row.get("expected_rmse") is not None else row["rmse"]


def fmt(x: Any, digits: int = 3) -> str:
    """Compact number formatting ('-' for missing)."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return "0" if x == 0 else f"{x:.{digits}g}"
    return str(x)
