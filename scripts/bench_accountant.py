"""Seconds per forward evaluation of each accountant bound at n = 1e4 ... 1e7 (prints JSON).

python scripts/bench_accountant.py --json [--ns 10000,100000] [--eps-local 4] [--delta 1e-6]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from protocols.accountant import _amplify, amplify  # noqa: E402

CASES = [
    ("balle", "grr", {"k": 2}),
    ("fmt21", "generic", {}),
    ("vr", "generic", {}),
    ("decomposition", "generic", {}),
    ("exact", "grr", {"k": 2}),
    ("decomposition", "grr", {"k": 10}),
]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="10000,100000,1000000,10000000")
    ap.add_argument("--eps-local", type=float, default=4.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rows = []
    for n in (int(x) for x in a.ns.split(",")):
        for bound, mech, kw in CASES:
            if bound == "decomposition" and mech == "grr" and n > 10**6:
                continue  # k >= 3 decomposition: minutes at 1e7 (see docs/accountant.md)
            _amplify.cache_clear()
            t0 = time.perf_counter()
            r = amplify(a.eps_local, n, a.delta, bound=bound, mechanism=mech, **kw)
            dt = time.perf_counter() - t0
            rows.append(
                {
                    "n": n,
                    "bound": bound,
                    "mechanism": mech,
                    **kw,
                    "eps_central": r.eps_central,
                    "kind": r.kind,
                    "lower": r.lower,
                    "seconds": round(dt, 3),
                }
            )
            if not a.json:
                print(rows[-1], flush=True)
    if a.json:
        print(json.dumps({"eps_local": a.eps_local, "delta": a.delta, "results": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
