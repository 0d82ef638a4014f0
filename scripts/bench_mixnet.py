"""Benchmark of the verifiable mix-net: proof of shuffle throughput against the hardware limit.

    python scripts/bench_mixnet.py --n 10000 --json            # one core, width 1
    python scripts/bench_mixnet.py --n 10000 --workers 2 --json   (prints the parallel
        efficiency against one worker on the same inputs: wall(1) / wall(W) / W, and the
        serial fraction: the parent's CPU over the one-worker CPU, with Amdahl's projection)
    python scripts/bench_mixnet.py --n 10000 --e2e --json      # + 3 servers end to end, verified
    python scripts/bench_mixnet.py --n 100 --e2e --e2e-n 100000 --workers 2 --fast-servers --json

The hardware limit is the throughput if a core did nothing but the counted group operations
(libsodium: V variable-base, F fixed-base multiplications, A additions; native backend: M
terms of a public-scalar multi-scalar multiplication, decode included, at the MSM size the
check uses; S terms of the constant-time MSM and C constant-time fixed-base multiplications
of the prover) at
the rates measured in the same process; ``ratio`` = measured / limit. ``group_backend`` says
which backend ran the public-scalar MSMs (``SDP_GROUP_BACKEND=libsodium`` forces the fallback). CPU time (``process_time``) is used so that
other load on a shared machine does not distort the ratio; wall time is reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mpc import ristretto as R  # noqa: E402
from mpc.elgamal import encode_rows, encrypt_points, keygen  # noqa: E402
from mpc.mixnet.proofs.shuffle.prover import prover_op_counts, shuffle_and_prove  # noqa: E402
from mpc.mixnet.proofs.shuffle.verifier import (  # noqa: E402
    verifier_op_counts,
    verify_mix_chain,
    verify_shuffle,
)
from mpc.mixnet.record_verifier import verify_record  # noqa: E402
from mpc.mixnet.schema import shuffle_generators  # noqa: E402
from mpc.pools import process_pool  # noqa: E402
from parties.runtime.cost_ledger import bench_peak_rss  # noqa: E402


def _timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def _warm(delay: float) -> int:
    """Pool warm-up task: holds a worker so that every worker starts (and imports the prover)."""
    time.sleep(delay)
    return os.getpid()


def measure_rates(m: int = 4000) -> dict[str, float]:
    """Operations per CPU-second of one core: V, F, A (libsodium); S (constant-time MSM
    terms) and C (constant-time fixed-base multiplications) when the extension is built."""
    pts = [R.hash_to_point(b"bench", i.to_bytes(4, "little")) for i in range(m)]
    sc = R.random_scalars(m)
    _, cv, _ = _timed(lambda: R.smul_many(sc, pts))
    _, cf, _ = _timed(lambda: R.smul_base_many(sc))
    _, ca, _ = _timed(lambda: R.add_many(pts, pts[1:] + pts[:1]))
    rates = {"V": m / cv, "F": m / cf, "A": m / ca}
    if R.backend() == "native MSM":  # the prover's constant-time native paths
        _, cs, _ = _timed(lambda: R.msm_secret(sc, pts))
        R.smul_fixed_many([(sc[:8], pts[0])])  # table built once per base (not timed)
        _, cc, _ = _timed(lambda: R.smul_fixed_many([(sc, pts[0])]))
        rates.update(S=m / cs, C=m / cc)
    return rates


def msm_rate(terms: int) -> float:
    """Terms per CPU-second of one ``R.msm`` of ``terms`` terms (scalar packing and point
    decoding included: the MSM's own cost per term at that size)."""
    base = [R.hash_to_point(b"bench-msm", i.to_bytes(4, "little")) for i in range(4096)]
    pts = (base * (terms // len(base) + 1))[:terms]
    sc = R.random_scalars(terms)
    _, c, _ = _timed(lambda: R.msm(sc, pts))
    return terms / c


def limit(counts: dict[str, float], rates: dict[str, float]) -> float:
    """Ciphertexts/s if only the counted operations ran."""
    return 1.0 / sum(
        counts.get(k, 0) / rates[k] for k in ("V", "F", "A", "M", "S", "C") if counts.get(k)
    )


def bench_proof(n: int, workers: int) -> dict[str, object]:
    rates0 = measure_rates()
    x, pk = keygen()
    ct, _ = encrypt_points(
        pk, encode_rows(np.random.default_rng(0).integers(0, 1000, (n, 1)), 1000)
    )
    sess = os.urandom(64)
    gens, _, gen_wall = _timed(lambda: shuffle_generators(sess, "b", n))
    pool, pool_start = None, None
    if workers > 1:  # a mixing server holds its pool for the run: started once, not per proof
        t0 = time.perf_counter()
        pool = process_pool(workers)
        if len(set(pool.map(_warm, [0.5] * workers))) != workers:
            raise RuntimeError("bench: the process pool did not start every worker")
        pool_start = time.perf_counter() - t0
    R.reset_ops()
    (out, proof), cp, wp = _timed(
        lambda: shuffle_and_prove(sess, 1, "b", pk, ct, gens, workers=workers, pool=pool)
    )
    if pool is not None:
        pool.shutdown()
    pops = {k: v / n for k, v in R.reset_ops().items()}
    t0 = time.thread_time()  # the verifier's native MSM chunks run in threads of this process
    _, cv, wv = _timed(
        lambda: verify_shuffle(sess, 1, "b", pk, ct, out, proof, gens, workers=workers)
    )
    serial = {"prove": cp, "verify": time.thread_time() - t0}
    vops = {k: v / n for k, v in R.reset_ops().items()}
    one = None
    if workers > 1:  # the same proof on one worker: the parallel efficiency's baseline
        (o1, p1), cp1, wp1 = _timed(
            lambda: shuffle_and_prove(sess, 1, "b", pk, ct, gens, workers=1)
        )
        _, cv1, wv1 = _timed(lambda: verify_shuffle(sess, 1, "b", pk, ct, o1, p1, gens, workers=1))
        one = {"prove": (wp1, cp1), "verify": (wv1, cv1)}
    chain = None
    if workers == 1:  # a run's verifier checks the chain of k proofs in one batched equation
        lists, proofs = [ct, out], [proof]
        for step in (2, 3):
            o, pr = shuffle_and_prove(sess, step, "b", pk, lists[-1], gens)
            lists.append(o)
            proofs.append(pr)
        R.reset_ops()
        _, cc, wc = _timed(lambda: verify_mix_chain(sess, "b", pk, lists, [1, 2, 3], proofs, gens))
        chain = (cc, wc, {k: v / (3 * n) for k, v in R.reset_ops().items()})
    rates1 = measure_rates()
    rates = {k: (rates0[k] + rates1[k]) / 2 for k in rates0}
    extra = {f"{k}_per_s": round(rates[k]) for k in ("S", "C") if k in rates}
    res: dict[str, object] = {
        "n": n,
        "width": 1,
        "workers": workers,
        "rates_per_core": {
            "variable_base_smul_per_s": round(rates["V"]),
            "fixed_base_smul_per_s": round(rates["F"]),
            "add_per_s": round(rates["A"]),
            **extra,
        },
        "generator_derivation_s": round(gen_wall, 3),
    }
    res["group_backend"] = R.backend()
    for name, ops, model, cpu, wall in (
        ("prove", pops, prover_op_counts(1), cp, wp),
        ("verify", vops, verifier_op_counts(1), cv, wv),
    ):
        if ops.get("M"):
            rates["M"] = msm_rate(round(ops["M"] * n))
        lim = limit(ops, rates)
        smul_only = 1.0 / max(1e-12, ops["V"] / rates["V"] + ops["F"] / rates["F"])
        entry: dict[str, object] = {
            "wall_s": round(wall, 3),
            "ct_per_s_wall": round(n / wall),
            "ops_model_per_ct": model,
        }
        if one is not None:
            w1, c1 = one[name]
            if name == "prove":
                entry["pool_start_s"] = round(pool_start or 0.0, 3)  # not in wall_s
            entry["one_worker_wall_s"] = round(w1, 3)
            entry["speedup"] = round(w1 / wall, 3)
            entry["parallel_efficiency"] = round(w1 / wall / workers, 3)
            # the parent's own CPU (it waits idle on the pool otherwise; the prover's workers
            # are processes, the verifier's native MSM chunks threads, so its main thread is
            # counted) is the serial part: its share f of the one-worker CPU bounds the
            # efficiency on W cores (Amdahl), and unlike wall time it is not distorted by other
            # load on a shared machine
            f = serial[name] / c1
            entry.update(
                one_worker_cpu_s=round(c1, 3),
                parent_serial_cpu_s=round(serial[name], 3),
                parent_serial_cpu_us_per_ct=round(1e6 * serial[name] / n, 2),
                serial_fraction=round(f, 4),
                amdahl_efficiency={
                    k: round(1 / (f + (1 - f) / k) / k, 3) for k in (2, 16) if k >= workers
                },
            )
        if workers == 1:  # counters and per-core figures are meaningful for a single process
            entry.update(
                ops_counted_per_ct={k: round(v, 3) for k, v in ops.items()},
                smul_per_ct=round(ops["V"] + ops["F"], 3),
                cpu_s=round(cpu, 3),
                ct_per_s_per_core=round(n / cpu),
                hardware_limit_ct_per_s=round(lim),
                ratio_to_limit=round(n / cpu / lim, 3),
                smul_only_limit_ct_per_s=round(smul_only),
            )
            if ops.get("M"):
                entry["msm_terms_per_s"] = round(rates["M"])
        res[name] = entry
    if chain is not None:
        cc, wc, cops = chain
        if cops.get("M"):
            rates["M"] = msm_rate(round(cops["M"] * 3 * n))
        lim = limit(cops, rates)
        res["verify_chain_of_3"] = {
            "what": "3 consecutive proofs (3 servers) checked as a run's verifier does: one "
            "batched equation; a list shared by two steps and the generators cost one term",
            "proof_ciphertexts": 3 * n,
            "wall_s": round(wc, 3),
            "cpu_s": round(cc, 3),
            "ops_counted_per_ct": {k: round(v, 3) for k, v in cops.items()},
            "ct_per_s_per_core": round(3 * n / cc),
            "hardware_limit_ct_per_s": round(lim),
            "ratio_to_limit": round(3 * n / cc / lim, 3),
            "smul_only_limit_ct_per_s": round(1.0 / max(1e-12, cops["V"] / rates["V"])),
        }
        if cops.get("M"):
            res["verify_chain_of_3"]["msm_terms_per_s"] = round(rates["M"])
    return res


def _cpu_all() -> float:
    """CPU seconds of this process and its reaped children (process pools)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


def bench_e2e(n: int, workers: int, combine_all: bool) -> dict[str, object]:
    from parties.mixnet.local import run_local
    from parties.mixnet.state import MixnetConfig
    from protocols.base import BatchSpec

    servers = ["mix1", "mix2", "mix3"]
    cfg = MixnetConfig(
        "bench",
        servers,
        [BatchSpec("grr", 1, 16)],
        t=2,
        workers=workers,
        combine_all=combine_all,
    )
    rows = np.random.default_rng(1).integers(0, 16, (n, 1))
    c0, w0 = _cpu_all(), time.perf_counter()
    shuffled, rec = run_local(cfg, {"grr": rows})
    wall, cpu = time.perf_counter() - w0, _cpu_all() - c0
    ok = sorted(shuffled["grr"][:, 0].tolist()) == sorted(rows[:, 0].tolist())
    c0, w0 = _cpu_all(), time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:  # reaped before measuring children CPU
            rep = verify_record(rec, workers=workers, pool=pool)
    else:
        rep = verify_record(rec)
    vwall, vcpu = time.perf_counter() - w0, _cpu_all() - c0
    return {
        "messages": n,
        "servers": 3,
        "threshold": 2,
        "workers": workers,
        "servers_verify_chain_before_decrypting": True,  # always (no switch)
        "every_server_combines": combine_all,
        "run_wall_s": round(wall, 2),
        "run_cpu_s": round(cpu, 2),
        "multiset_ok": ok,
        "verify_wall_s": round(vwall, 2),
        "verify_cpu_s": round(vcpu, 2),
        "verify_ok": rep.ok,
        "verify_checks": [
            {"name": c.name, "count": c.count, "ok": c.ok, "s": round(c.seconds, 2)}
            for c in rep.checks
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000, help="ciphertexts")
    ap.add_argument("--workers", type=int, default=1, help="processes (1 = one core)")
    ap.add_argument("--e2e", action="store_true", help="also run 3 servers end to end and verify")
    ap.add_argument("--e2e-n", type=int, default=None, help="messages for --e2e (default --n)")
    ap.add_argument(
        "--fast-servers",
        action="store_true",
        help="only the lowest server of the decryption set combines (servers always verify the "
        "whole mix chain before decrypting)",
    )
    ap.add_argument("--json", action="store_true", help="print JSON only")
    a = ap.parse_args()
    if a.n < 2 or a.workers < 1:
        ap.error("--n must be >= 2 and --workers >= 1")
    out: dict[str, object] = {"proof_of_shuffle": bench_proof(a.n, a.workers)}
    out["anchors_ct_per_s"] = {
        "verificatum_24_cores": 500,
        "python_bayer_groth_p256_1_core": 1080,
        "target_per_core": 2000,
        "target_ratio": 0.7,
    }
    if a.e2e:
        out["end_to_end"] = bench_e2e(a.e2e_n or a.n, a.workers, not a.fast_servers)
    out["peak_rss_per_party"] = bench_peak_rss()
    print(json.dumps(out, indent=None if a.json else 2))


if __name__ == "__main__":
    main()
