"""V-9 (docs/spec/07-privacy.md): every field of the signed privacy statement re-derived from the
public run parameters. The verifier builds the protocol from the cluster file's parameters (the
clients do the same, so this is the calibration they ran) and compares the analyzer's statement
with the protocol's own, field by field and type by type; the ledger (``releases``, ``total``)
and ``fakes`` are V-23's, ``shuffler_security`` is informational (V-30 checks the mode)."""

from __future__ import annotations

import math
import re
from typing import Any

# V-23's fields (re-derived by the gate on the signed counts) and the informational ones
LEDGER_KEYS = ("releases", "total", "fakes")
INFORMATIONAL = ("shuffler_security", "spec_version")
SPEC_MAJORS = (1,)  # the major versions of docs/spec/ this verifier implements
SIMULATION_WARNING = (
    "SIMULATION WITHOUT PRIVACY: the client randomness was seeded from the public cluster file "
    "(--seed), so anyone holding the run directory can recompute every user's local noise"
)


def same_json(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """Spec E-7 typed equality: equal JSON types (an integer is neither a float nor a boolean),
    maps with the same keys, lists of one length, floats within ``rel`` (absolute 1e-12); NaN
    equals only NaN."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k], rel) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_json(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return type(a) is type(b) and a == b


def expected_statement(protocol: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The statement fields the public parameters fix (V-9): the protocol's own statement and the
    simulation marking of a seeded run."""
    from parties.runtime.codec import to_jsonable

    out = dict(to_jsonable(protocol.privacy()))
    for k in LEDGER_KEYS:
        out.pop(k, None)
    if params.get("seed") is not None:
        out["simulation"] = True
        out["warning"] = SIMULATION_WARNING
    else:
        out["simulation"] = False
    return out


def version_failure(signed: dict[str, Any]) -> str:
    """P-1: ``spec_version`` "MAJOR.MINOR" with a major version this verifier implements (absent:
    a run made before versions were recorded, version 1.0); "" when it is."""
    v = signed.get("spec_version", "1.0")
    if not isinstance(v, str) or not re.fullmatch(r"[0-9]+\.[0-9]+", v):
        return f"privacy.spec_version {v!r} is not a version 'MAJOR.MINOR'"
    if int(v.split(".")[0]) not in SPEC_MAJORS:
        return f"spec version {v}: unknown major version (this verifier implements {SPEC_MAJORS})"
    return ""


def statement_failure(protocol: Any, params: dict[str, Any], signed: Any) -> str:
    """ "" when every field of the signed statement outside the ledger is what the public
    parameters give (V-9), else the first field that is not."""
    if not isinstance(signed, dict):
        return "the signed privacy statement is not a map"
    if version_failure(signed):
        return version_failure(signed)
    mine = expected_statement(protocol, params)
    theirs = {k: v for k, v in signed.items() if k not in LEDGER_KEYS and k not in INFORMATIONAL}
    for k in sorted(set(mine) | set(theirs)):
        if k not in theirs:
            return f"the signed privacy statement lacks {k!r}"
        if k not in mine:
            return f"the signed privacy statement has a field {k!r} the protocol does not state"
        if not same_json(mine[k], theirs[k]):
            return (
                f"privacy.{k} = {theirs[k]!r}, but the public parameters give {mine[k]!r} "
                "(the clients' calibration)"
            )
    return ""
