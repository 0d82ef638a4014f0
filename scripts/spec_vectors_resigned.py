"""Invalid run directories re-signed by the analyzer, copies of the MPC grr vector
(``tests/vectors/spec/mpc-run``): its privacy statement with one field edited (docs/spec/
07-privacy.md; result.json repeats it, so only the statement's own checks can catch it), each
failing V-9 (a field the public parameters fix) or V-23 (the ledger) in both verifiers; and a
message entry whose field has the wrong JSON type (03 T-12: V-3).

    python scripts/spec_vectors_resigned.py list | corrupt NAME OUT
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cbor2

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the spec-vector modules, beside this file


def _edit_statement(run: Path, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Re-sign the analyzer's privacy artifact after ``change`` and repeat it in result.json."""
    from spec_vectors_corruptions import _blob, _find, _substitute  # scripts/, beside this file

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
    from spec_vectors_corruptions import _blob, _find, _substitute

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


def _spec_version_2(run: Path) -> None:
    """The analyzer re-signs its statement claiming spec version 2.0."""
    _edit_statement(run, lambda p: p.__setitem__("spec_version", "2.0"))


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


def _entry_field(field: str, value: Callable[[Any], Any]) -> Callable[[Path], None]:
    def corrupt(run: Path) -> None:
        from spec_vectors_corruptions import _entries, _resign

        es = _entries(run, "analyzer")
        k = next(i for i, e in enumerate(es) if e["dir"] == "publish" and e["ty"] == "estimate")
        es[k][field] = value(es[k][field])
        _resign(run, "analyzer", es)

    corrupt.__doc__ = f"the analyzer re-signs its estimate's publish entry with {field} retyped"
    return corrupt


TYPE_CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "entry-pub-int": (_entry_field("pub", lambda x: 1), "V-3", '"pub": 1 (not a boolean)'),
    "entry-len-float": (_entry_field("len", float), "V-3", '"len": 114.0 (not an integer)'),
    "entry-rd-bool": (_entry_field("rd", lambda x: False), "V-3", '"rd": false (not an integer)'),
}


def _result_field(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def corrupt(run: Path) -> None:
        res = json.loads((run / "result.json").read_text())
        change(res)
        (run / "result.json").write_text(json.dumps(res, indent=1))

    return corrupt


OTHER_CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "spec-version-2": (
        _spec_version_2,
        "V-9",
        "the analyzer's statement says spec version 2.0 (an unknown major version)",
    ),
    "result-sha-edited": (
        _result_field(lambda r: r.__setitem__("estimate_sha256", "00" * 32)),
        "V-22",
        "result.json estimate_sha256 is not the signed estimate's digest (07 R-1)",
    ),
    "result-params-edited": (
        _result_field(lambda r: r["params"].__setitem__("epsilon", 0.1)),
        "V-22",
        "result.json params.epsilon added (0.1): not the cluster file's (07 R-1)",
    ),
}
RESIGNED = {**PRIVACY_CORRUPTIONS, **TYPE_CORRUPTIONS, **OTHER_CORRUPTIONS}


def corrupt(name: str, out: Path) -> str:
    """Write invalid run directory ``name`` (a copy of the MPC grr vector) to ``out``; returns the
    check it must fail."""
    from spec_vectors_paths import MPC_RUN

    fn, check, _ = RESIGNED[name]
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(MPC_RUN, out)
    fn(out)
    return check


def main(argv: list[str]) -> int:
    if argv[:1] == ["corrupt"] and len(argv) == 3:
        print(corrupt(argv[1], Path(argv[2])))
    elif argv[:1] == ["list"]:
        print(json.dumps({k: v[1] for k, v in RESIGNED.items()}, indent=1))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
