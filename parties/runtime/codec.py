"""Deterministic payload encoding: canonical CBOR, with numpy arrays as tagged maps."""

from __future__ import annotations

from typing import Any

import cbor2
import numpy as np

_ALLOWED_DTYPES = {"<i8", "<i4", "<u8", "<u4", "<u1", "<f8", "|u1", "|i1", "<i2", "<u2"}


def dumps(value: Any) -> bytes:
    """Canonical CBOR of ``value`` (dict keys sorted, shortest integer forms)."""
    return cbor2.dumps(value, canonical=True)


def loads(data: bytes) -> Any:
    """Decode CBOR; raises ``ValueError`` on malformed input."""
    try:
        return cbor2.loads(data)
    except Exception as exc:  # cbor2 raises several types
        raise ValueError(f"malformed CBOR payload: {exc}") from None


def array_to_obj(arr: np.ndarray) -> dict[str, Any]:
    """A numpy array as a CBOR-able map {dtype, shape, data} (little-endian, C order)."""
    a = np.ascontiguousarray(arr)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": a.tobytes()}


def obj_to_array(obj: Any, *, max_elements: int = 1 << 31) -> np.ndarray:
    """Inverse of ``array_to_obj`` with validation of dtype, shape and length."""
    if not isinstance(obj, dict) or set(obj) != {"dtype", "shape", "data"}:
        raise ValueError("array payload must be a map with keys dtype, shape, data")
    dtype, shape, data = obj["dtype"], obj["shape"], obj["data"]
    if dtype not in _ALLOWED_DTYPES:
        raise ValueError(f"array dtype {dtype!r} not allowed")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise ValueError(f"bad array shape {shape!r}")
    count = int(np.prod(shape)) if shape else 1
    if count > max_elements:
        raise ValueError(f"array of {count} elements exceeds limit {max_elements}")
    dt = np.dtype(dtype)
    if not isinstance(data, bytes) or len(data) != count * dt.itemsize:
        raise ValueError(
            f"array data length {len(data) if isinstance(data, bytes) else '?'} "
            f"does not match shape {shape} of {dtype}"
        )
    return np.frombuffer(data, dtype=dt).reshape(shape)


def dump_array(arr: np.ndarray) -> bytes:
    """Encode one array as a payload."""
    return dumps(array_to_obj(arr))


def load_array(data: bytes) -> np.ndarray:
    """Decode one array payload."""
    return obj_to_array(loads(data))


def to_jsonable(x: Any) -> Any:
    """numpy values/arrays inside an estimate -> plain JSON types."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x
