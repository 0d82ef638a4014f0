"""``sdp reproduce splitmix [--quick] --out DIR``: private summation on Adult.

Anchor (Balle, Bell, Gascon, Nissim CCS 2020, ``adriagascon/shuffledpsummation`` main.ipynb):
mean of x = (age/130)^2 over Adult's 32,561 training rows, eps = 1, delta = 1/n^2, 50
repetitions, mean absolute error of the estimated mean. Published: split-and-mix (IKOS) 1.1e-5,
single message 5.9e-4, three messages (optimized recursive) 4.9e-4, central Laplace 3.0e-5.

We run, through the same encoder/analyzer code path as networked runs (``trusted_shuffle`` in
process; the MPC shuffler and the mix-net return the same multiset):
- Split-Mix with our parameters (``protocols.summation.split_mix``);
- the single-message k-RR baseline accounted by the DP core's accountant (variation-ratio bound,
  GRR parameters; the anchor used the looser privacy-blanket Bennett bound);
- central Laplace;
- "split-and-mix, published noise parameterization": the anchor's CentralGeom code draws each
  user's Polya share as scipy ``nbinom(1/n, p=exp(-eps/p))``; scipy's ``p`` is the *success*
  probability, so the total noise is geometric with ratio 1 - exp(-eps/p) ~ eps/p instead of
  exp(-eps/p): almost no noise (not eps-DP). We reproduce it to explain why the published 1.1e-5
  is below central Laplace's 3.0e-5; a correctly noised split-mix cannot beat central Laplace.
Three-message recursive summation is not implemented (published value listed only).

Also reports the bytes each user sends under each shuffler: MPC (Shamir shares to m = 3
servers) and mix-net (ristretto255
ElGamal ciphertexts, 64 bytes per group element, ``mpc.elgamal.message_layout``; the client's
proof of knowledge is not included).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from protocols.base import gate_shuffled, trusted_shuffle
from protocols.summation.split_mix import (
    SingleMessageSum,
    SplitMixSum,
    central_laplace_sum,
    splitmix_parameters,
)

PUBLISHED_MAE = {
    "split-and-mix": 1.1e-5,
    "single message": 5.9e-4,
    "three messages": 4.9e-4,
    "central Laplace": 3.0e-5,
}


def published_noise_splitmix_mean(x: np.ndarray, eps: float, rng: np.random.Generator) -> float:
    """The anchor code's CentralGeom estimator (precision sqrt(n), its noise parameterization)."""
    n = x.size
    p = np.sqrt(n)
    y = x * p  # the anchor's (non-integer) precision: int(x p) + Bernoulli(frac)
    q = np.floor(y) + (rng.random(n) < y - np.floor(y))
    a = np.exp(-eps / p)
    # scipy nbinom(r, p=a) == numpy negative_binomial(r, a): success probability a
    z = rng.negative_binomial(1.0 / n, a, n).sum() - rng.negative_binomial(1.0 / n, a, n).sum()
    return float((q.sum() + z) / p / n)


def bytes_per_user(proto: Any, servers: int = 3) -> dict[str, Any]:
    """Bytes one user sends under each shuffler for ``proto``'s messages."""
    from mpc.elgamal import message_layout
    from mpc.shamir import PRIME

    specs = proto.batch_specs()
    per_user = proto.messages_per_user()
    element = (PRIME.bit_length() + 7) // 8
    comps = sum(message_layout(s.width, s.bound)[1] for s in specs)
    return {
        "messages": per_user,
        "mpc_field_bytes": per_user * servers * element * sum(s.width for s in specs),
        "mixnet_ciphertext_bytes": per_user * comps * 64,
    }


def run(reps: int, seed: int, data_dir: str | None, n_limit: int | None) -> dict[str, Any]:
    """All estimators on the Adult encoding; returns the result table."""
    from protocols.summation.workload import adult_age_values

    x = adult_age_values(data_dir)
    if n_limit:
        x = x[:n_limit]
    n, eps = x.size, 1.0
    delta = 1.0 / n**2
    truth = float(x.mean())
    sm = SplitMixSum(splitmix_parameters(n, eps, delta))
    single = SingleMessageSum(n, eps, delta)
    errs: dict[str, list[float]] = {
        k: []
        for k in (
            "split-and-mix",
            "single message",
            "central Laplace",
            "split-and-mix (published noise)",
        )
    }
    t0 = time.perf_counter()
    for r in range(reps):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r,)))
        shuffled = trusted_shuffle(sm.encode(x, rng), rng)
        gate_shuffled(sm, shuffled, x.shape[0])  # every release passes the privacy gate
        est = sm.analyze(shuffled)
        errs["split-and-mix"].append(abs(est["mean"] - truth))
        shuffled = trusted_shuffle(single.encode(x, rng), rng)
        gate_shuffled(single, shuffled, x.shape[0])
        est = single.analyze(shuffled)
        errs["single message"].append(abs(est["mean"] - truth))
        errs["central Laplace"].append(abs(central_laplace_sum(x, eps, rng) / n - truth))
        errs["split-and-mix (published noise)"].append(
            abs(published_noise_splitmix_mean(x, eps, rng) - truth)
        )
    elapsed = time.perf_counter() - t0
    rows = []
    for name, e in errs.items():
        a = np.asarray(e)
        rows.append(
            {
                "estimator": name,
                "mae": float(a.mean()),
                "mae_stderr": float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else None,
                "published_mae": PUBLISHED_MAE.get(name),
            }
        )
    rows.append(
        {
            "estimator": "three messages",
            "mae": None,
            "mae_stderr": None,
            "published_mae": PUBLISHED_MAE["three messages"],
        }
    )
    return {
        "dataset": "UCI Adult adult.data, x = (age/130)^2",
        "n": n,
        "epsilon": eps,
        "delta": delta,
        "reps": reps,
        "seed": seed,
        "true_mean": truth,
        "splitmix_params": sm.privacy(),
        "single_message": single.privacy() | {"levels": single.levels},
        "rows": rows,
        "bytes_per_user": {
            "split-and-mix": bytes_per_user(sm),
            "single message": bytes_per_user(single),
        },
        "seconds": elapsed,
    }


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2e}"


def markdown(res: dict[str, Any]) -> str:
    """The Markdown report."""
    p = res["splitmix_params"]
    lines = [
        "# Split-Mix summation on Adult (reproduction)",
        "",
        f"Mean of (age/130)^2 over n = {res['n']} Adult rows, eps = {res['epsilon']}, "
        f"delta = 1/n^2 = {res['delta']:.3g}, {res['reps']} repetitions (seed {res['seed']}); "
        f"true mean {res['true_mean']:.6f}. Mean absolute error of the estimated mean.",
        "",
        "| estimator | MAE (ours) | std. error | published MAE |",
        "|---|---|---|---|",
    ]
    for r in res["rows"]:
        lines.append(
            f"| {r['estimator']} | {_fmt(r['mae'])} | {_fmt(r['mae_stderr'])} | "
            f"{_fmt(r['published_mae'])} |"
        )
    lines += [
        "",
        f"Split-Mix parameters: sigma = {p['sigma']}, precision p = {p['precision']}, "
        f"tail bound B = {p['tail_bound']}, modulus q = {p['modulus']}, s = {p['shares']} "
        f"messages per user; (eps, delta) = ({res['epsilon']}, {p['delta']:.3g}) by Theorem 9.",
        f"Single message: k-RR on {res['single_message']['levels'] + 1} levels, local eps "
        f"{res['single_message']['eps_local']:.3f} (accountant, {res['single_message']['bound']} "
        "bound).",
        "",
        "Why ours differs from the published split-and-mix value: the anchor's code draws the "
        "Polya shares with scipy `nbinom(1/n, p=exp(-eps/p))`, where scipy's p is the success "
        "probability; the total noise is then geometric with ratio about eps/p, i.e. almost "
        "none, and its 1.1e-5 is the randomized-rounding error alone. Row 'published noise' "
        "re-runs that parameterization and matches 1.1e-5. With the noise that makes the sum "
        "eps-DP, split-and-mix is within rounding error of central Laplace (1/(n eps) = "
        f"{1 / (res['n'] * res['epsilon']):.2e}). Three-message recursive summation is not "
        "implemented here.",
        "",
        "## Bytes each user sends",
        "",
        "| protocol | messages | MPC shuffler, 3 servers: field bytes | mix-net ciphertexts |",
        "|---|---|---|---|",
    ]
    for name, b in res["bytes_per_user"].items():
        lines.append(
            f"| {name} | {b['messages']} | {b['mpc_field_bytes']} | "
            f"{b['mixnet_ciphertext_bytes']} |"
        )
    lines += [
        "",
        "MPC: 4 bytes per field element per server (GF(2^31-1)); a networked run's framing is "
        "measured per phase by `sdp costs` (`sdp run splitmix-sum --shuffler mpc`). "
        "Mix-net: 64 bytes per ristretto255 ElGamal ciphertext, without the client's proof of "
        "knowledge. Central Laplace needs a trusted curator (one value per user, no shuffler).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Entry point of ``sdp reproduce splitmix``."""
    ap = argparse.ArgumentParser(prog="sdp reproduce splitmix")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--quick", action="store_true", help="5 repetitions instead of 50")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", default=None, help="folder holding adult/adult.data.gz")
    args = ap.parse_args(argv)
    reps = args.reps or (5 if args.quick else 50)
    res = run(reps, args.seed, args.data_dir, None)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "splitmix.json").write_text(json.dumps(res, indent=2))
    (out / "splitmix.md").write_text(markdown(res))
    print(markdown(res))
    return 0
