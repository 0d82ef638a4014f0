"""What ``sdp run`` prints of a finished run: the published estimate with the schema's labels,
the privacy statement as readable lines, and the value labels ``result.json`` carries."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

_S = TypeVar("_S")


def _run_schema(params: dict[str, Any], kind: type[_S]) -> _S | None:
    """The public schema in the run's parameters when it is a ``kind`` (a run on own data of
    that kind), else None."""
    text = params.get("schema")
    if not text:
        return None
    from protocols.datasets.schema import parse_schema

    schema = parse_schema(str(text), "the run's schema")
    return schema if isinstance(schema, kind) else None


def schema_labels(params: dict[str, Any]) -> dict[str, list[str]] | None:
    """{attribute: value labels} of a categorical run on own data (from the public schema in
    the run's parameters), else None."""
    from protocols.datasets.schema_model import CategoricalSchema

    schema = _run_schema(params, CategoricalSchema)
    if schema is None:
        return None
    return {a.name: list(a.labels()) for a in schema.attributes}


def item_ids(params: dict[str, Any]) -> list[int | str] | None:
    """The item ids of a set-valued run on own data, by item index (from the public schema:
    the integers of a range universe, the labels of a listed one), else None."""
    from protocols.datasets.schema_model import RangeDomain, SetValuedSchema

    schema = _run_schema(params, SetValuedSchema)
    if schema is None:
        return None
    u = schema.universe
    if isinstance(u, RangeDomain):
        return list(range(u.low, u.high + 1))
    return list(u.labels())


def numeric_estimate(estimate: dict[str, Any], params: dict[str, Any]) -> dict[str, Any] | None:
    """The published sum and mean of a numeric run on own data in the file's units (the
    protocols sum values mapped to [0, 1] from the schema's public [low, high]), else None."""
    if not isinstance(estimate.get("sum"), (int, float)):
        return None
    from protocols.datasets.schema_model import NumericSchema

    schema = _run_schema(params, NumericSchema)
    if schema is None:
        return None
    v, n = schema.value, int(params["users"])
    width = float(v.high) - float(v.low)
    total = float(v.low) * n + float(estimate["sum"]) * width
    return {"column": v.name, "low": v.low, "high": v.high, "sum": total, "mean": total / n}


def numeric_line(est: dict[str, Any]) -> str:
    """The numeric estimate as one labelled line."""
    return (
        f"published estimate: sum of {est['column']!r} = {est['sum']:.6g}, mean = "
        f"{est['mean']:.6g} (each value clipped to [{est['low']:g}, {est['high']:g}])"
    )


def top_k_items(estimate: dict[str, Any], ids: list[int | str]) -> list[int | str] | None:
    """The published top-k as the file's item ids (None without a top-k in the estimate)."""
    top = estimate.get("top_k")
    if not isinstance(top, list) or any(not 0 <= int(i) < len(ids) for i in top):
        return None
    return [ids[int(i)] for i in top]


def top_k_table(result: dict[str, Any]) -> Any:
    """A rich table of the published top-k: rank, the file's item id, estimated frequency."""
    from rich.table import Table

    est = result.get("estimate") or {}
    items, freqs = result["top_k_items"], est.get("top_k_frequencies") or []
    t = Table(title=f"published top-{len(items)} by item id")
    for c in ("rank", "item", "estimated frequency"):
        t.add_column(c, justify="right")
    for r, item in enumerate(items):
        f = f"{float(freqs[r]):.4f}" if r < len(freqs) else ""
        t.add_row(str(r + 1), str(item), f)
    return t


def labelled_marginals(
    estimate: dict[str, Any], labels: dict[str, list[str]]
) -> dict[str, dict[str, float]] | None:
    """The published 1-way marginals as {attribute: {value label: frequency}} (None when the
    estimate has no marginals in the schema's attribute order)."""
    attrs, margs = estimate.get("attributes"), estimate.get("marginals")
    if not attrs or margs is None or len(attrs) != len(margs):
        return None
    out: dict[str, dict[str, float]] = {}
    for name, m in zip(attrs, margs):
        names = labels.get(name)
        if m is None or names is None or len(names) != len(m):
            return None
        out[name] = {lab: float(v) for lab, v in zip(names, m)}
    return out


def estimate_table(labelled: dict[str, dict[str, float]], top: int = 12) -> Any:
    """A rich table of the labelled marginals (each attribute's values, largest first)."""
    from rich.table import Table

    t = Table(title="published estimate (1-way marginals, schema labels)")
    for c in ("attribute", "value", "estimated frequency"):
        t.add_column(c, justify="left" if c != "estimated frequency" else "right")
    for name, freqs in labelled.items():
        order = np.argsort([-v for v in freqs.values()])[:top]
        items = list(freqs.items())
        for i, j in enumerate(order):
            lab, v = items[int(j)]
            t.add_row(name if i == 0 else "", lab, f"{v:.4f}")
        if len(freqs) > top:
            t.add_row("", f"... {len(freqs) - top} more", "")
    return t


def privacy_lines(priv: dict[str, Any]) -> list[str]:
    """The privacy statement as plain lines: the total, then each release."""
    lines = []
    total = priv.get("total") or {}
    if total:
        lines.append(
            f"privacy: total (eps = {_num(total.get('eps'))}, delta = {_num(total.get('delta'))})"
            f" [{total.get('kind', '')}] over {total.get('releases', 0)} release(s); "
            f"{total.get('composition', '')}"
        )
    elif "eps_c" in priv or "eps" in priv:
        lines.append(
            f"privacy: eps = {_num(priv.get('eps_c', priv.get('eps')))}, "
            f"delta = {_num(priv.get('delta'))}"
        )
    for r in priv.get("releases") or []:
        n = r.get("n_received")
        lines.append(
            f"  release: {r.get('what', '')}: (eps = {_num(r.get('eps'))}, delta = "
            f"{_num(r.get('delta'))}) [{r.get('kind', '')}, {r.get('bound', '')}] by "
            f"{r.get('mechanism', '')}; accounted for {r.get('n_accounted')} users"
            + (f", {n} received" if n is not None else "")
            + (" (re-accounted)" if r.get("reaccounted") else "")
        )
    params = [
        f"{k} = {_num(v)}"
        for k, v in priv.items()
        if k not in ("total", "releases")
        and v not in (None, "")
        and not isinstance(v, (dict, list))
    ]
    if params:
        lines.append("  parameters: " + ", ".join(params))
    return lines


def _num(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
