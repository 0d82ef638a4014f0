"""Self-test of one MPC shuffler server process on MPyC's real runtime (multi-process tests).

``python -m parties.mpc_shuffle.selftest selftest --pid I --m 3 --base-port P --n N --out FILE`` runs one
server: identical test data in every process, a check that our Shamir shares are MPyC shares of
the same secret, coalition seed agreement, permute-and-reshare and (``--mode histogram``) the
histogram output; ``--die-after-seeds`` kills the last server to exercise the watchdog. Writes
its shares and stats as JSON to ``--out``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import numpy as np

from mpc import permute_reshare as pr
from mpc import shamir
from mpc.shamir import PRIME
from parties.mpc_shuffle.mpyc_runtime import (
    MPCServerError,
    guarded,
    make_runtime,
    mpyc_bytes_sent,
    start_runtime,
)
from parties.mpc_shuffle.reshare_exchange import (
    agree_coalition_seeds,
    mpyc_permute_reshare,
    to_secfld,
)
from parties.mpc_shuffle.secure_ops import mpc_histogram
from parties.mpc_shuffle.wire import MODES, SENTINEL, MPCShufflerConfig


async def _selftest(args: Any) -> int:
    m, t = args.m, (args.m - 1) // 2
    names = tuple(f"server{i}" for i in range(m))
    cfg = MPCShufflerConfig(
        servers=names,
        analyzer="analyzer",
        clients=(),
        threshold=t,
        mode=args.mode,
        timeout=args.timeout,
    )
    addresses = [("127.0.0.1", args.base_port + i) for i in range(m)]
    rt = make_runtime(args.pid, addresses, t, ssl_dir=args.ssl_dir)
    await start_runtime(rt, args.timeout)
    # identical test data and (deterministic, test-only) sharing polynomials in every process
    rng = np.random.default_rng(args.seed)
    x = rng.integers(0, args.bound, size=(args.n, 1))
    x[: args.invalid, 0] = args.bound + 5
    coef = rng.integers(0, PRIME, size=(t, args.n, 1))
    mine = shamir.share(np.where(x >= args.bound, SENTINEL, x), m, t, coefficients=coef)[args.pid]
    # MPyC compatibility: our shares are MPyC shares of the same secret
    sec = to_secfld(rt, mine[:5, 0])
    opened = await guarded(rt, cfg, "mpyc-output", rt.output(sec))
    compat = [int(v) for v in opened] == np.where(x >= args.bound, SENTINEL, x)[:5, 0].tolist()
    coals = pr.coalitions(m, t)
    seeds = await guarded(rt, cfg, "seed agreement", agree_coalition_seeds(rt, coals, b"st"))
    if args.die_after_seeds and args.pid == m - 1:
        os._exit(3)  # simulate a killed server
    t0 = time.perf_counter()
    out = await guarded(
        rt, cfg, "permute-and-reshare", mpyc_permute_reshare(rt, {"x": mine}, seeds, b"st")
    )
    elapsed = time.perf_counter() - t0
    res: dict[str, Any] = {"pid": args.pid, "compat": compat, "shuffle_s": elapsed}
    if args.mode == "histogram":
        counts, invalid = await guarded(
            rt, cfg, "histogram", mpc_histogram(rt, out, {"x": args.bound})
        )
        res["counts_share"] = counts["x"].tolist()
        res["invalid"] = invalid["x"]
    res["share"] = out["x"][:, 0].tolist()
    res["data"] = x[:, 0].tolist()
    res["bytes_sent"] = mpyc_bytes_sent(rt)
    await guarded(rt, cfg, "shutdown", rt.shutdown())
    with open(args.out, "w") as f:
        import json

        json.dump(res, f)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m parties.mpc_shuffle.selftest selftest ...``: one MPyC server process of a self-test."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m parties.mpc_shuffle.selftest")
    ap.add_argument("command", choices=["selftest"])
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--base-port", type=int, required=True)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--bound", type=int, default=4)
    ap.add_argument("--invalid", type=int, default=0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--mode", choices=MODES, default="open")
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--ssl-dir", default=None)
    ap.add_argument("--die-after-seeds", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    try:
        return asyncio.run(_selftest(args))
    except MPCServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
