"""Seed 001 metrics: output-size ratio, top-K retention, per-iteration protocol costs."""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.txpub.model import TxData


def ratios(data: TxData, counts_floor: np.ndarray) -> dict[str, float]:
    """ratio = sum floor(x) / sum c, per site ('A', 'B') and overall (spec §5)."""
    x = np.asarray(counts_floor, float)
    c = data.counts.astype(float)
    if x.shape != c.shape:
        raise ValueError(f"ratios: counts shape {x.shape}, expected {c.shape}")
    a, b = slice(0, data.m1), slice(data.m1, data.m)
    return {
        "A": float(x[a].sum() / c[a].sum()),
        "B": float(x[b].sum() / c[b].sum()),
        "overall": float(x.sum() / c.sum()),
    }


def top_k(values: np.ndarray, k: int) -> set[int]:
    """Indices of the k largest values, ties broken by item index."""
    v = np.asarray(values, float)
    if not 0 < k <= len(v):
        raise ValueError(f"top_k: k={k} outside [1, {len(v)}]")
    order = np.lexsort((np.arange(len(v)), -v))
    return {int(i) for i in order[:k]}


def top_k_retention(true_counts: np.ndarray, out_counts: np.ndarray, k: int) -> float:
    """p = |FI cap FI'| / k with FI the top-k by true support and FI' by output support."""
    return len(top_k(true_counts, k) & top_k(out_counts, k)) / k


def iteration_costs(history: list[dict[str, Any]]) -> dict[str, float]:
    """Median and total protocol cost per LM iteration from a secure run's history."""
    if not history:
        return {"iterations": 0}
    b = np.array([h.get("bytes_A", 0) + h.get("bytes_B", 0) for h in history], float)
    msg = np.array([h.get("messages", 0) for h in history], float)
    sec = np.array([h.get("seconds", 0.0) for h in history], float)
    calls = np.array([h.get("gram_calls", 0) for h in history], float)
    return {
        "iterations": len(history),
        "bytes_median": float(np.median(b)),
        "bytes_total": float(b.sum()),
        "messages_median": float(np.median(msg)),
        "seconds_median": float(np.median(sec)),
        "seconds_total": float(sec.sum()),
        "gram_protocol_calls_median": float(np.median(calls)),
    }
