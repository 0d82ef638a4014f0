"""``sdp account``: privacy-amplification accountant on the command line.

Forward:  sdp account --n N --delta D --eps-local E [--mechanism grr --k K] [--bound all] [--json]
Inverse:  sdp account --n N --delta D --eps-central E [...]   (largest local epsilon)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from protocols.accountant import BOUNDS, FMT23_ERRATUM, MECHANISMS, amplify, max_local_epsilon
from protocols.accountant.fmt21 import fmt21_epsilon, fmt21_max_local_epsilon


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="sdp account", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, required=True, help="number of shuffled users")
    ap.add_argument("--delta", type=float, required=True, help="central delta")
    grp = ap.add_mutually_exclusive_group(required=True)
    grp.add_argument("--eps-local", type=float, help="local epsilon (forward direction)")
    grp.add_argument("--eps-central", type=float, help="target central epsilon (inverse)")
    ap.add_argument("--mechanism", default="generic", choices=MECHANISMS)
    ap.add_argument("--k", type=int, default=None, help="GRR domain size")
    ap.add_argument("--g", type=int, default=None, help="OLH hash range")
    ap.add_argument("--d", type=int, default=None, help="domain size (unary encodings)")
    ap.add_argument("--bound", default="vr", choices=(*BOUNDS, "all"))
    ap.add_argument("--json", action="store_true", help="print JSON")
    return ap


def _kwargs(a: argparse.Namespace) -> dict[str, Any]:
    return {"mechanism": a.mechanism, "k": a.k, "g": a.g, "d": a.d}


def run(a: argparse.Namespace) -> dict[str, Any]:
    """Compute the requested bounds; returns the JSON-ready result."""
    n = int(a.n)
    if n != a.n:
        raise ValueError(f"--n must be an integer, got {a.n}")
    bounds = BOUNDS if a.bound == "all" else (a.bound,)
    out: dict[str, Any] = {"n": n, "delta": a.delta, **_kwargs(a), "results": {}}
    forward = a.eps_local is not None
    out["direction"] = "forward" if forward else "inverse"
    out["eps_local" if forward else "eps_central"] = a.eps_local if forward else a.eps_central
    for b in bounds:
        t0 = time.perf_counter()
        if forward:
            r = amplify(a.eps_local, n, a.delta, bound=b, **_kwargs(a))
            res: dict[str, Any] = {
                "eps_central": r.eps_central,
                "lower": r.lower,
                "valid": r.valid,
                "reason": r.reason,
            }
        else:
            v = max_local_epsilon(a.eps_central, n, a.delta, bound=b, **_kwargs(a))
            res = {"max_eps_local": v, "valid": v is not None}
            if b == "vr" and a.mechanism == "generic":
                res["reason"] = FMT23_ERRATUM
        res["seconds"] = round(time.perf_counter() - t0, 4)
        out["results"][b] = res
    if "fmt21" in bounds:
        # the public reference code's 100-wide bucketing, for comparison with published numbers
        if forward:
            v = fmt21_epsilon(a.eps_local, n, a.delta, step=100)
            out["results"]["fmt21_ref_step100"] = {"eps_central": v, "valid": v is not None}
        else:
            v = fmt21_max_local_epsilon(a.eps_central, n, a.delta, step=100)
            out["results"]["fmt21_ref_step100"] = {"max_eps_local": v, "valid": True}
    return out


def _fmt(x: float | None) -> str:
    return "none" if x is None else f"{x:.4g}"


def main(argv: list[str]) -> int:
    """Entry point of ``sdp account``."""
    a = _parser().parse_args(argv)
    try:
        out = run(a)
    except ValueError as exc:
        print(f"sdp account: {exc}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    head = f"n={out['n']} delta={out['delta']:g} mechanism={a.mechanism}"
    if out["direction"] == "forward":
        print(f"{head} eps_local={a.eps_local:g} -> central epsilon")
        for b, r in out["results"].items():
            low = f" (lower {_fmt(r.get('lower'))})" if r.get("lower") is not None else ""
            print(f"  {b:<18} {_fmt(r['eps_central'])}{low}")
            if r.get("reason") and r["reason"] != FMT23_ERRATUM:
                print(f"    {r['reason'].replace(FMT23_ERRATUM, '').strip()}")
    else:
        print(f"{head} eps_central={a.eps_central:g} -> largest local epsilon")
        for b, r in out["results"].items():
            print(f"  {b:<18} {_fmt(r['max_eps_local'])}")
    if a.mechanism == "generic" and ("vr" in out["results"]):
        print(f"note: {FMT23_ERRATUM}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
