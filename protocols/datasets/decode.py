"""Vectorised decoding of raw field values (Arrow binary arrays) into domain indices.

One call decodes one column of one chunk: no Python loop over rows. Each value gets a status:
``OK``, ``MISSING`` (a missing token, policy reject), ``OUT_OF_DOMAIN`` (policy reject),
``UNPARSABLE`` (not a number where the domain is numeric; the row is malformed), or a kept but
changed value: ``OTHER_MISSING`` / ``OTHER_OUT_OF_DOMAIN`` (mapped to the schema's explicit
``other`` value) and ``CLIPPED`` (moved to the nearest end of a range or of the bins). Numbers
are recognised by a strict pattern (``[+-]digits[.digits][e[+-]digits]``; no ``nan``, ``inf``,
thousands separators or spaces inside), so what counts as a number never depends on a locale.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from protocols.datasets.schema_model import (
    Attribute,
    BinsDomain,
    NumericColumn,
    RangeDomain,
    ValuesDomain,
)

OK, MISSING, OUT_OF_DOMAIN, UNPARSABLE, OTHER_MISSING, OTHER_OUT_OF_DOMAIN, CLIPPED = range(7)
KEPT_STATUSES = (OK, OTHER_MISSING, OTHER_OUT_OF_DOMAIN, CLIPPED)

INT_RE = r"^[+-]?0*[0-9]{1,18}$"
DIGITS_RE = r"^[+-]?[0-9]+$"
NUM_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
STRIP_RE = r"^[ \t]+|[ \t]+$"


def _np_bool(a: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def _as_binary(values: list[str]) -> pa.Array:
    return pa.array([v.encode("utf-8") for v in values], type=pa.binary())


def strip(col: pa.Array) -> pa.Array:
    """Spaces and tabs trimmed at both ends of every value."""
    edge = pc.or_(
        pc.or_(pc.starts_with(col, b" "), pc.starts_with(col, b"\t")),
        pc.or_(pc.ends_with(col, b" "), pc.ends_with(col, b"\t")),
    )
    if not pc.any(edge).as_py():
        return col
    return pc.replace_substring_regex(col, STRIP_RE, b"")


def _cast(col: pa.Array, to: pa.DataType) -> np.ndarray | None:
    """All values cast at once (the fast path), or None if any value does not parse."""
    try:
        return pc.cast(pc.cast(col, pa.string()), to).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def parse_ints(
    col: pa.Array, skip: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(parsed, values, huge): ``parsed`` where a value is an integer of at most 18 digits,
    ``huge`` where it is a longer integer (certainly outside any range). Values where ``skip``
    is set (missing tokens) are neither."""
    n = len(col)
    vals = np.zeros(n, dtype=np.int64)
    todo = np.ones(n, dtype=bool) if skip is None else ~skip
    sub = col if todo.all() else col.filter(pa.array(todo))
    fast = _cast(sub, pa.int64()) if not pc.any(pc.starts_with(sub, b"+")).as_py() else None
    if fast is not None and (not len(sub) or np.abs(fast).max() < 10**18):
        vals[todo] = fast
        return todo, vals, np.zeros(n, dtype=bool)
    ok = todo & _np_bool(pc.match_substring_regex(col, INT_RE))
    huge = todo & ~ok & _np_bool(pc.match_substring_regex(col, DIGITS_RE))
    if ok.any():
        good = pc.replace_substring_regex(col.filter(pa.array(ok)), r"^\+", b"")
        vals[ok] = pc.cast(pc.cast(good, pa.string()), pa.int64()).to_numpy()
    return ok, vals, huge


def parse_floats(col: pa.Array, skip: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(parsed, values): finite decimal numbers only (``1e999``, ``nan`` are not parsed)."""
    n = len(col)
    vals = np.zeros(n, dtype=np.float64)
    todo = np.ones(n, dtype=bool) if skip is None else ~skip
    sub = col if todo.all() else col.filter(pa.array(todo))
    fast = _cast(sub, pa.float64())
    if fast is not None:
        ok = todo.copy()
        vals[todo] = fast
    else:
        ok = todo & _np_bool(pc.match_substring_regex(col, NUM_RE))
        if ok.any():
            vals[ok] = pc.cast(pc.cast(col.filter(pa.array(ok)), pa.string()), pa.float64())
    bad = ~np.isfinite(vals)
    ok &= ~bad
    vals[bad] = 0.0
    return ok, vals


def is_missing(col: pa.Array, tokens: tuple[str, ...]) -> np.ndarray:
    """Where a value equals one of the missing-value tokens (the empty token by its length)."""
    out = np.zeros(len(col), dtype=bool)
    if "" in tokens:
        out |= pc.binary_length(col).to_numpy(zero_copy_only=False) == 0
    rest = [t for t in tokens if t]
    if rest:
        out |= _np_bool(pc.is_in(col, value_set=_as_binary(rest)))
    return out


def values_index(col: pa.Array, values: tuple[str, ...]) -> np.ndarray:
    """Index of every value in ``values`` (-1 when absent)."""
    idx = pc.index_in(col, value_set=_as_binary(list(values)))
    return np.asarray(pc.fill_null(idx, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def decode_attribute(col: pa.Array, attr: Attribute) -> tuple[np.ndarray, np.ndarray]:
    """(codes int64 in [0, attr.size), status uint8) for one column of raw (stripped) values."""
    n = len(col)
    codes = np.zeros(n, dtype=np.int64)
    status = np.full(n, OK, dtype=np.uint8)
    miss = is_missing(col, attr.missing)
    dom = attr.domain
    below = np.zeros(n, dtype=bool)
    above = np.zeros(n, dtype=bool)
    if isinstance(dom, ValuesDomain):
        idx = values_index(col, dom.values)
        ood = (idx < 0) & ~miss
        codes[idx >= 0] = idx[idx >= 0]
    elif isinstance(dom, RangeDomain):
        ok, v, huge = parse_ints(col, miss)
        status[~ok & ~huge & ~miss] = UNPARSABLE
        below = (ok & (v < dom.low)) | (huge & _np_bool(pc.starts_with(col, b"-")))
        above = (ok & (v > dom.high)) | (huge & ~below)
        inside = ok & ~below & ~above
        codes[inside] = v[inside] - dom.low
        ood = (below | above) & ~miss
    else:
        assert isinstance(dom, BinsDomain)
        ok, x = parse_floats(col, miss)
        status[~ok & ~miss] = UNPARSABLE
        e = np.asarray(dom.edges)
        below = ok & (x < e[0])
        above = ok & (x > e[-1])
        inside = ok & ~below & ~above
        codes[inside] = np.minimum(np.searchsorted(e, x[inside], side="right") - 1, dom.size - 1)
        ood = (below | above) & ~miss
    other = dom.size  # the extra value's index, when the schema has one
    if attr.on_missing == "other":
        codes[miss] = other
        status[miss] = OTHER_MISSING
    else:
        status[miss] = MISSING
    ood &= status != UNPARSABLE
    if attr.on_out_of_domain == "other":
        codes[ood] = other
        status[ood] = OTHER_OUT_OF_DOMAIN
    elif attr.on_out_of_domain == "clip":
        codes[ood & below] = 0
        codes[ood & above] = dom.size - 1
        status[ood] = CLIPPED
    else:
        status[ood] = OUT_OF_DOMAIN
    return codes, status


def decode_numeric(col: pa.Array, spec: NumericColumn) -> tuple[np.ndarray, np.ndarray]:
    """(values float64 in [0, 1], status uint8): clipped to [low, high], then scaled."""
    miss = is_missing(col, spec.missing)
    ok, x = parse_floats(col, miss)
    status = np.full(len(col), OK, dtype=np.uint8)
    status[~ok & ~miss] = UNPARSABLE
    status[miss] = MISSING
    outside = ok & ~miss & ((x < spec.low) | (x > spec.high))
    status[outside] = CLIPPED if spec.on_out_of_range == "clip" else OUT_OF_DOMAIN
    y = (np.clip(x, spec.low, spec.high) - spec.low) / (spec.high - spec.low)
    return np.clip(y, 0.0, 1.0), status


def item_index(tokens: pa.Array, universe: ValuesDomain | RangeDomain) -> np.ndarray:
    """Index of every item token in the universe (-1 outside it or unparsable)."""
    if isinstance(universe, ValuesDomain):
        return values_index(tokens, universe.values)
    ok, v, _ = parse_ints(tokens)
    inside = ok & (v >= universe.low) & (v <= universe.high)
    out = np.full(len(tokens), -1, dtype=np.int64)
    out[inside] = v[inside] - universe.low
    return out


def describe(raw: bytes, limit: int = 40) -> str:
    """A raw value shown in an example line (decoded leniently, shortened)."""
    s = raw.decode("utf-8", errors="replace")
    return repr(s if len(s) <= limit else s[: limit - 3] + "...")
