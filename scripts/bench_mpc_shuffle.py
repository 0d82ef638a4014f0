"""Benchmark: the MPC shuffle on MPyC, malicious-abort vs semi-honest, and ``mpyc.random.shuffle``.

    python scripts/bench_mpc_shuffle.py [--json] [--ns 10000,100000,1000000] [--baseline-n 200]

The security modes run at every n, side by side: ``semi-honest`` is seed agreement +
permute-and-reshare; ``malicious-abort`` (the default) adds what ``server_run`` adds (the
client-sharing check with the MAC keys, the tags, the shuffle of value and tags together, the
MAC check; ``parties.mpc_shuffle.malicious``); ``malicious-abort+multiset`` also the multiset
check (``--param mpc_multiset=on``). Times are per server: wall seconds and CPU seconds
(``time.process_time``, the number to compare on a loaded machine; CPU seconds per step for
server 0); the ratios are of the largest per-server CPU time. Wall seconds are valid only on
a quiet machine: the 1, 5 and 15 minute load averages before and after are in the JSON.

Runs m = 3 servers (t = 1) as separate processes on loopback, launched by MPyC's own ``-M3``
mechanism (party 0 spawns parties 1 and 2). For every n: one Shamir-shared vector of n field
elements (GF(2^31-1), shared with a common seed in every process: the client upload is not
timed), then X25519 seed agreement + permute-and-reshare, timed from a barrier to the last
server done; bytes are what each server sent over MPyC's connections (12-byte MPyC headers
included). The result is opened to party 0 and checked to be a permutation of the input. Then
``mpyc.random.shuffle`` (oblivious Fisher-Yates, O(n^2)) on ``--baseline-n`` elements and our
shuffle on the same n, with the speed ratio. Prints JSON with --json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mpc.pools import peak_rss  # noqa: E402


class _BenchNode:
    """What the input check needs of a party: its name, signing key and everyone's keys."""

    def __init__(self, name: str, keys: dict) -> None:
        self.name, self.signer = name, keys[name]
        self.public_keys = {n: k.public_key for n, k in keys.items()}


def _client_evidence(cfg, signer, per_server, randomness) -> list[dict]:  # noqa: ANN001
    """The evidence a client attaches to its one block, per server (``input_evidence``)."""
    from mpc import input_commit
    from mpc.mixnet.schema import signed_statement
    from parties.verify.evidence import digest

    label = cfg.label
    salts, masks, digests, opened = input_commit.commit_block(
        label, "client", 0, cfg.servers, cfg.threshold, per_server, randomness
    )
    body = {"client": "client", "block": 0, "last": True, "digests": digests, "open": opened}
    sig = signer.sign(signed_statement("mpc-input", label.decode(), "client", digest(body)))
    st = {"body": body, "sig": sig}
    return [{"statement": st, "salt": salts[j], "mask": masks[j]} for j in range(cfg.m)]


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON only")
    ap.add_argument("--ns", default="10000,100000,1000000", help="comma-separated sizes")
    ap.add_argument("--baseline-n", type=int, default=200, help="n for mpyc.random.shuffle")
    ap.add_argument("--reps", type=int, default=1, help="repetitions per n (best and all kept)")
    ap.add_argument("--as-party", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    return ap.parse_known_args(argv)[0]


async def _worker(args: argparse.Namespace) -> None:
    import numpy as np
    from mpyc.runtime import mpc

    from mpc import mac_check as mc
    from mpc import permute_reshare as pr
    from mpc import shamir
    from parties.mpc_shuffle import malicious as mal
    from parties.mpc_shuffle.mpyc_runtime import mpyc_bytes_sent
    from parties.mpc_shuffle.reshare_exchange import agree_coalition_seeds, mpyc_permute_reshare
    from parties.mpc_shuffle.wire import MPCShufflerConfig
    from parties.runtime.signing import Signer

    await mpc.start()
    m, t, me = len(mpc.parties), mpc.threshold, mpc.pid
    coals = pr.coalitions(m, t)

    names = tuple(f"mpc-{i + 1}" for i in range(m))
    keys = {n: Signer(hashlib.sha256(n.encode()).digest()) for n in (*names, "client")}

    async def sync() -> None:
        await mpc.transfer(None)

    async def one_run(n: int, label: bytes, security: str = "semi-honest") -> dict:
        rng = np.random.default_rng(n)
        x = rng.integers(0, shamir.PRIME, size=(n, 1))
        coef = rng.integers(0, shamir.PRIME, size=(t, n, 1))
        mine = shamir.share(x, m, t, coefficients=coef)[me]
        await sync()
        b0, t0, c0 = mpyc_bytes_sent(mpc), time.perf_counter(), time.process_time()
        steps: dict[str, float] = {}
        last = [c0]

        def step(name: str) -> None:  # CPU seconds of this server per step
            now = time.process_time()
            steps[name] = round(now - last[0], 4)
            last[0] = now

        # the client's signed commitment (not timed, as the upload): every process derives the
        # same one (seeded salts, mask and keys; Ed25519 signatures are deterministic)
        cfg = MPCShufflerConfig(names, "analyzer", ("client",), threshold=t, run_label=label)
        nodes = [_BenchNode(s, keys) for s in names]
        all_shares = shamir.share(x, m, t, coefficients=coef)
        per_server = [{"x": all_shares[j]} for j in range(m)]
        salts = [bytes([j]) * 32 for j in range(m)]
        mask = shamir.share(np.arange(1, 4), m, t, coefficients=np.ones((t, 3), dtype=np.int64))
        evidence = _client_evidence(cfg, keys["client"], per_server, (salts, mask))
        seeds = await agree_coalition_seeds(mpc, coals, label)
        step("seed agreement")
        if security.startswith("malicious-abort"):
            log = mal.CheckLog()
            blocks = {"client": [({"x": mine}, {"evidence": evidence[me]})]}
            bad, alpha, _ = await mal.check_inputs(mpc, nodes[me], cfg, blocks, ["client"], log)
            assert not bad, "bench: the honest client's sharing was refused"
            step("input check and MAC keys")
            tags, own = await mal.tag_batches(mpc, alpha, {"x": mine}, coals[0])
            stacked = {"x": mc.stack_tags(mine, tags["x"])}
            addend = None if own is None else {"x": mc.stack_tags(None, own["x"])}
            step("MAC tags")
            shuffled = await mpyc_permute_reshare(mpc, stacked, seeds, label, addend=addend)
            y, ytags = mc.split_tags(shuffled["x"], 1)
            step("permute-and-reshare (value + tags)")
            multiset = security.endswith("+multiset")  # --param mpc_multiset=on
            await mal.verify_shuffle(
                mpc, alpha, {"x": mine}, {"x": y}, {"x": ytags}, label, log, multiset
            )
            step("MAC check" + (" and multiset check" if multiset else ""))
            out = {"x": y}
        else:
            out = await mpyc_permute_reshare(mpc, {"x": mine}, seeds, label)
            step("permute-and-reshare")
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
        sent = mpyc_bytes_sent(mpc) - b0
        await sync()
        # verification (not timed): open to party 0, compare multisets
        shares = await mpc.transfer(shamir.to_wire(out["x"]), receivers=0)
        ok = None
        if me == 0:
            allsh = np.stack([shamir.from_wire(s, (n, 1), "bench") for s in shares])
            y = shamir.reconstruct(allsh[: t + 1], list(range(t + 1)))
            ok = bool(np.array_equal(np.sort(y[:, 0]), np.sort(x[:, 0])))
            ok = ok and bool(shamir.consistent(allsh, t).all())
        per = await mpc.transfer(
            {"seconds": elapsed, "cpu_seconds": cpu, "bytes_sent": sent, "steps": steps},
            receivers=0,
        )
        return {"n": n, "verified": ok, "servers": per}

    def summary(reps: list[dict]) -> dict:
        best = min(reps, key=lambda r: max(s["cpu_seconds"] for s in r["servers"]))
        return {
            "seconds": max(s["seconds"] for s in best["servers"]),
            "cpu_seconds": max(s["cpu_seconds"] for s in best["servers"]),
            "all_runs_cpu_seconds": [max(s["cpu_seconds"] for s in r["servers"]) for r in reps],
            "cpu_seconds_per_server": [round(s["cpu_seconds"], 4) for s in best["servers"]],
            "seconds_per_server": [round(s["seconds"], 4) for s in best["servers"]],
            "bytes_sent_per_server": [s["bytes_sent"] for s in best["servers"]],
            "cpu_seconds_per_step_server0": best["servers"][0]["steps"],
            "verified": all(r["verified"] for r in reps),
        }

    results = []
    for n in [int(v) for v in args.ns.split(",") if v]:
        modes = {}
        for security in ("semi-honest", "malicious-abort", "malicious-abort+multiset"):
            reps = [
                await one_run(n, f"bench-{n}-{security}-{r}".encode(), security)
                for r in range(args.reps)
            ]
            modes[security] = summary(reps) if me == 0 else None
        if me == 0:
            results.append(
                {
                    "n": n,
                    **modes,
                    "cpu_ratio_malicious_over_semi_honest": _ratio(modes, "malicious-abort"),
                    "cpu_ratio_malicious_multiset_over_semi_honest": _ratio(
                        modes, "malicious-abort+multiset"
                    ),
                }
            )

    # baseline: MPyC's oblivious Fisher-Yates on a list of secure field elements
    nb = args.baseline_n
    secfld = mpc.SecFld(shamir.PRIME)
    xs = [secfld(i) for i in range(nb)]
    await sync()
    b0, t0 = mpyc_bytes_sent(mpc), time.perf_counter()
    mpc.random.shuffle(secfld, xs)
    await mpc.gather(xs)
    base_s = time.perf_counter() - t0
    base_b = mpyc_bytes_sent(mpc) - b0
    opened = await mpc.output(xs)
    base_ok = sorted(int(v) for v in opened) == list(range(nb))
    ours = await one_run(nb, b"bench-baseline-n")
    base_per = await mpc.transfer({"seconds": base_s, "bytes_sent": base_b}, receivers=0)
    rss = await mpc.transfer(peak_rss(), receivers=0)
    await mpc.shutdown()
    if me == 0:
        ours_s = max(s["seconds"] for s in ours["servers"])
        b_s = max(s["seconds"] for s in base_per)
        report = {
            "benchmark": "mpc_shuffle",
            "servers": m,
            "threshold": t,
            "field": "GF(2^31-1)",
            "rounds": len(coals),
            "mac_keys": mc.MAC_KEYS,
            "multiset_repetitions": mc.MULTISET_REPETITIONS,
            "input_check_repetitions": mc.INPUT_CHECK_REPETITIONS,
            "timing": "per server; cpu_seconds = time.process_time() of the server process, "
            "max over the servers; the three servers share this machine's cores",
            "permute_and_reshare": results,
            "baseline": {
                "name": "mpyc.random.shuffle",
                "n": nb,
                "seconds": b_s,
                "bytes_sent_per_server": [s["bytes_sent"] for s in base_per],
                "verified": base_ok,
                "ours_seconds_same_n": ours_s,
                "ours_bytes_same_n": [s["bytes_sent"] for s in ours["servers"]],
                "speed_ratio": b_s / ours_s if ours_s > 0 else None,
            },
            "targets": {
                "n=1e4_seconds": 0.5,
                "n=1e6_seconds": 10.0,
                "malicious_over_semi_honest": 3.0,
            },
            "peak_rss_per_party": {f"mpc-{i + 1}": {"peak_rss_bytes": b} for i, b in enumerate(rss)},
            "python": sys.version.split()[0],
            "cpu_count": os.cpu_count(),
        }
        with open(args.result, "w") as f:
            json.dump(report, f)


def _ratio(modes: dict, key: str) -> float | None:
    """CPU seconds of mode ``key`` over those of the semi-honest mode."""
    sh = modes["semi-honest"]["cpu_seconds"]
    return modes[key]["cpu_seconds"] / sh if sh > 0 else None


def main(argv: list[str] | None = None) -> int:
    """Orchestrate: launch party 0 with ``-M3`` (MPyC spawns the other two) and print."""
    argv = sys.argv[1:] if argv is None else argv
    args = _parse(argv)
    if args.as_party:
        from mpyc.runtime import mpc

        mpc.run(_worker(args))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "result.json")
        base = 20000 + int.from_bytes(os.urandom(2), "little") % 30000
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--as-party",
            "--ns",
            args.ns,
            "--baseline-n",
            str(args.baseline_n),
            "--reps",
            str(args.reps),
            "--result",
            result,
            "-M3",
            "-B",
            str(base),
            "--no-log",
        ]
        t0 = time.perf_counter()
        report_load = [round(x, 2) for x in os.getloadavg()]
        proc = subprocess.run(
            cmd,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=3600,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        if proc.returncode != 0 or not os.path.exists(result):
            print(
                f"bench_mpc_shuffle: worker failed (exit {proc.returncode}):\n{proc.stderr}",
                file=sys.stderr,
            )
            return 1
        with open(result) as f:
            report = json.load(f)
        report["wall_seconds"] = time.perf_counter() - t0
        report["load_average_1_5_15_min_before"] = report_load
        report["load_average_1_5_15_min_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for r in report["permute_and_reshare"]:
            sh, ma = r["semi-honest"], r["malicious-abort"]
            mm = r["malicious-abort+multiset"]
            print(
                f"n={r['n']:>8}: semi-honest {sh['cpu_seconds']:.3f} s CPU, malicious-abort "
                f"{ma['cpu_seconds']:.3f} s CPU ({r['cpu_ratio_malicious_over_semi_honest']:.2f}x)"
                f", + multiset {mm['cpu_seconds']:.3f} s CPU "
                f"({r['cpu_ratio_malicious_multiset_over_semi_honest']:.2f}x), "
                f"verified={sh['verified'] and ma['verified'] and mm['verified']}"
            )
        b = report["baseline"]
        print(
            f"mpyc.random.shuffle n={b['n']}: {b['seconds']:.2f} s vs ours "
            f"{b['ours_seconds_same_n']:.4f} s: {b['speed_ratio']:.0f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
