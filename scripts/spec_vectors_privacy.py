"""Invalid run directories of the privacy statement (docs/spec/07-privacy.md): copies of the MPC
grr vector (``tests/vectors/spec/mpc-run``) whose analyzer re-signs its privacy statement with one
field edited (result.json repeats it, so only the statement's own checks can catch it). Each must
fail V-9 (a field the public parameters fix) or V-23 (the ledger) in both verifiers.

    python scripts/spec_vectors_privacy.py list | corrupt NAME OUT
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cbor2

sys.path.insert(0, str(Path(__file__).resolve().parent))  # make_spec_vectors, beside this file


def _edit_statement(run: Path, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Re-sign the analyzer's privacy artifact after ``change`` and repeat it in result.json."""
    from make_spec_vectors import _blob, _find, _substitute  # scripts/, beside this file

    e = _find(run, "analyzer", lambda e: e["dir"] == "publish" and e["ty"] == "privacy")
    priv = cbor2.loads(_blob(run, "analyzer", e["dg"]))
    change(priv)
    _substitute(run, e["dg"], cbor2.dumps(priv, canonical=True))
    res = json.loads((run / "result.json").read_text())
    res["privacy"] = priv
    (run / "result.json").write_text(json.dumps(res, indent=1))
    return priv


def _set(key: str, fn: Callable[[Any], Any]) -> Callable[[Path], None]:
    def corrupt(run: Path) -> None:
        def change(p: dict[str, Any]) -> None:
            p[key] = fn(p[key])

        _edit_statement(run, change)

    corrupt.__doc__ = f"the analyzer re-signs privacy.{key} edited"
    return corrupt


def c_eps_local_and_estimate(run: Path) -> None:
    """The analyzer states eps_local = 1.0 (the clients ran the calibrated 1.72) and re-signs an
    estimate recomputed with it: V-21 alone cannot see it, the calibration must (V-9)."""
    import numpy as np
    from make_spec_vectors import _blob, _find, _substitute

    from parties.runtime import codec
    from protocols.oracles.grr import grr_estimate_from_counts

    _edit_statement(run, lambda p: p.__setitem__("eps_local", 1.0))
    shuffled = _find(run, "analyzer", lambda e: e["dir"] == "publish" and e["ty"] == "shuffled")
    rows = cbor2.loads(_blob(run, "analyzer", shuffled["dg"]))["batches"]["reports"]
    values = codec.obj_to_array(rows).reshape(-1).astype(np.int64)
    counts = np.bincount(values, minlength=10).astype(np.float64)
    est = {
        "frequencies": grr_estimate_from_counts(counts, 1.0, n=int(values.size)).tolist(),
        "reports": int(values.size),
    }
    e = _find(run, "analyzer", lambda e: e["dir"] == "publish" and e["ty"] == "estimate")
    _substitute(run, e["dg"], cbor2.dumps(est, canonical=True))
    res = json.loads((run / "result.json").read_text())
    res["estimate"] = est
    (run / "result.json").write_text(json.dumps(res, indent=1))


def c_release_eps(run: Path) -> None:
    """The release's eps and the total divided by 10 together (L-2 holds; L-4 must catch it)."""

    def change(p: dict[str, Any]) -> None:
        p["releases"][0]["eps"] /= 10
        p["total"]["eps"] /= 10

    _edit_statement(run, change)


def c_total_composition(run: Path) -> None:
    def change(p: dict[str, Any]) -> None:
        p["total"]["composition"] = "advanced composition (Dwork, Rothblum, Vadhan)"

    _edit_statement(run, change)


PRIVACY_CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "privacy-eps-central": (
        _set("eps_central", lambda x: x / 10),
        "V-9",
        "signed eps_central divided by 10",
    ),
    "privacy-delta": (_set("delta", lambda x: x / 1000), "V-9", "signed delta divided by 1000"),
    "privacy-bound": (_set("bound", lambda x: "exact"), "V-9", "signed bound set to 'exact'"),
    "privacy-n-accounted": (
        _set("n_accounted", lambda x: x * 10),
        "V-9",
        "signed n_accounted multiplied by 10",
    ),
    "privacy-mechanism": (
        _set("mechanism", lambda x: "grr(k=2)"),
        "V-9",
        "signed mechanism changed to grr(k=2)",
    ),
    "privacy-eps-local": (
        c_eps_local_and_estimate,
        "V-9",
        "signed eps_local 1.0 (clients used 1.72), estimate recomputed to match",
    ),
    "privacy-target": (
        _set("eps_central_target", lambda x: x * 10),
        "V-9",
        "signed eps_central_target multiplied by 10",
    ),
    "privacy-release-eps": (c_release_eps, "V-23", "a release's eps and the total divided by 10"),
    "privacy-total": (
        _set("total", lambda t: {**t, "eps": t["eps"] / 10}),
        "V-23",
        "signed total eps divided by 10",
    ),
    "privacy-composition": (
        c_total_composition,
        "V-23",
        "signed total names another composition",
    ),
}


def corrupt(name: str, out: Path) -> str:
    """Write invalid run directory ``name`` (a copy of the MPC grr vector) to ``out``; returns the
    check it must fail."""
    from make_spec_vectors import MPC_RUN

    fn, check, _ = PRIVACY_CORRUPTIONS[name]
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(MPC_RUN, out)
    fn(out)
    return check


def main(argv: list[str]) -> int:
    if argv[:1] == ["corrupt"] and len(argv) == 3:
        print(corrupt(argv[1], Path(argv[2])))
    elif argv[:1] == ["list"]:
        print(json.dumps({k: v[1] for k, v in PRIVACY_CORRUPTIONS.items()}, indent=1))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
