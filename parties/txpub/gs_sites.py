"""Seed 001 GS as two parties: site A (master, Paillier key owner) and site B, over PartyContext.

``site_a(ctx, ...)`` runs the LM solver of ``global_solution`` with a ``SecureOracle``
(``parties.txpub.secure_oracle``): every
quantity the step needs is split into A's part (computed locally from D_A, C_A and the public
iterate) and B's part, obtained from B by request; the A x B cross blocks of the weighted Gram
matrices go through the optimized Paillier protocol of ``mpc.scalar_product`` (or, with
``protocol="per_entry"``, the faithful per-entry protocol, for small instances).
``site_b(ctx, ...)`` serves those requests. ``ctx.phase("lm", k)`` marks LM iteration k.

What each site learns (no more security is claimed than this; spec §1.3, §8.16):
* both: the iterates X^k, W^k (public by the paper's design; in form "v" X^k is
  v = -c ln(1 - x/c), from which x needs the private c), theta, the final counts;
* A: the per-transaction sums s^B (needed for the FB/paper residual; the paper's protocol leaks
  them too, spec §8.16), B's per-item aggregates (G^T w, dh/dX, h0 for B's items), B's local
  Gram blocks G_B^T diag(c) G_B, the products G_B^T V, G_B M and (G_B o G_B) v for public V and
  A-chosen M, and the cross blocks Gamma_AB(c). All of these are functions of J^T J, J^T F and
  the public iterate, i.e. of what the paper's protocol reveals to A; they determine much of
  B's data (through G_B M for several M, A can in principle recover D_B and C_B, as it can from
  the paper's J^T J). This is *not* a secure computation of the LM step; it hides only the
  individual products, like the paper.
* B: the public iterate, the weight vectors (functions of W and s, hence of s^A), the
  vectors V and M of A's requests, and A's public fixed-point scales. B learns nothing from
  A's ciphertexts (IND-CPA under DCR and the short-exponent assumption of ``mpc.paillier``,
  which holds against B since B does not know the factorization).
* B's Paillier answers reveal to A their plaintexts and nothing else, whatever key A chose:
  B checks A's key (modulus proof, base, exponent floor) and re-randomizes every answer with a
  fresh full-size r^N, never with A's fixed base (issue 16, item 3).
Who must be honest: everything above assumes a semi-honest A. A malicious A learns B's columns
regardless of the Paillier layer: it may ask for G_B M with M the identity (``gapply``) or put
chosen values into its encrypted query. The Paillier hardening removes the covert channel
(the randomness of B's answers), not this; a GS secure against a malicious A needs a different
protocol (see ``docs/security-mpc-txpub.md``).
The FB-mode globalization (``globalize``, default ``method="newton"``) uses the same requests:
per iteration one Gram with the single weight vector p/a (a, p the FB partials of the
transaction rows, computed by A from W and s), G^T (l/a), G dX and G^T dW, where l is the FB
residual and (dX, dW) the step, which B sees anyway in the next iterate; its trial points of
the line search are iterates like any other. So B sees vectors of the kinds listed above and
A the same kinds of B-aggregates: nothing new is revealed to either site, and the start point
(X, W) = 0 is public and data-independent.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np

from mpc.paillier import MIN_KEY_BITS, FastPaillier, PaillierPublic
from mpc.scalar_product import ProtocolStats
from parties.runtime import codec
from parties.txpub.paillier_exchange import gram_cross_bob, gram_cross_per_entry_bob
from parties.txpub.publish import SiteResult, publish_a, publish_b
from parties.txpub.secure_oracle import CountingContext, SecureOracle, _arr, _get
from protocols.txpub import global_solution as gsol
from protocols.txpub import lm
from protocols.txpub.model import TxData, check_feasible, floor_counts, theta
from protocols.txpub.site_state import SiteState

# ----------------------------------------------------------------------------- the two sites


async def site_a(
    ctx: Any,
    D_A: np.ndarray,
    th: float,
    *,
    peer: str = "B",
    mode: str = "fb",
    form: str = "v",
    key_bits: int = 2048,
    protocol: str = "optimized",
    max_iter: int = 2000,
    tol: float = 1e-10,
    exp_bits: int = 256,
    ids: np.ndarray | None = None,
    seed: int | None = None,
    workers: int = 1,
    method: str = "newton",
) -> SiteResult:
    """Site A (master): key generation, the LM loop, publication of the final iterate.

    ``method`` selects the FB-mode globalization (``global_solution.gs_solve``).

    With ``ids`` (the transaction ids, same order at both sites) the sites also sample their
    items (Algorithm 1 step 2) and A joins the samples by id (``SiteResult.published``).
    """
    ctx.phase("setup", 0)
    site = SiteState(D_A, form)
    fp = FastPaillier.generate(key_bits, exp_bits)
    await ctx.send(peer, "txpub.key", codec.dumps(fp.public.to_dict()), public=True)
    hello = codec.loads(await ctx.recv(peer, "txpub.hello"))
    n_b, m2 = int(hello["n"]), int(hello["m2"])
    if n_b != site.D.shape[0]:
        raise ValueError(f"site_a: B holds {n_b} transactions, A holds {site.D.shape[0]}")
    oracle = SecureOracle(ctx, peer, site, fp, m2, protocol, workers)
    history: list[dict[str, Any]] = []
    res = (
        await gsol.gs_solve(
            oracle, th, mode, tol=tol, max_iter=max_iter, on_iter=history.append, method=method
        )
        if mode == "fb"
        else await lm.lm_solve(
            oracle, th, "paper", tol=tol, max_iter=max_iter, on_iter=history.append
        )
    )
    ctx.phase("publish", 0)
    await ctx.send(
        peer,
        "txpub.req",
        codec.dumps({"op": "done", "X": _arr(res.X), "converged": bool(res.converged)}),
        public=True,
    )
    x = site.counts(res.X[: site.D.shape[1]])
    for h in history:
        h.update(oracle.iter_stats.get(h["iter"], {}))
    out = SiteResult(floor_counts(x), x, res.X, res.summary(), history, oracle.stats.as_dict())
    if ids is not None:
        out.published = await publish_a(ctx, peer, site.D, out.counts_floor, ids, seed)
    return out


async def site_b(
    ctx: Any,
    D_B: np.ndarray,
    *,
    peer: str = "A",
    form: str = "v",
    ids: np.ndarray | None = None,
    seed: int | None = None,
    key_bits: int | None = None,
) -> SiteResult:
    """Site B: answers A's requests with its local parts; joins the Paillier protocols.

    B refuses A's Paillier key (ValueError, before answering anything) unless it passes
    ``PaillierPublic.from_dict``: at least ``key_bits`` bits (the agreed size; default the
    library floor), a valid modulus proof, a non-degenerate base and exponents of at least
    ``MIN_EXP_BITS``. B never uses A's base: its answers carry fresh full-size randomizers."""
    ctx.phase("setup", 0)
    site = SiteState(D_B, form)
    try:
        pub = PaillierPublic.from_dict(
            codec.loads(await ctx.recv(peer, "txpub.key")), key_bits or MIN_KEY_BITS
        )
    except ValueError as exc:
        raise ValueError(f"site_b: refusing {peer}'s Paillier key: {exc}") from None
    await ctx.send(peer, "txpub.hello", codec.dumps({"n": site.D.shape[0], "m2": site.D.shape[1]}))
    stats = ProtocolStats()
    m2 = site.D.shape[1]
    while True:
        req = codec.loads(await ctx.recv(peer, "txpub.req"))
        if not isinstance(req, dict) or "op" not in req:
            raise ValueError(f"site_b: malformed request from {peer}")
        op = req["op"]
        if op == "done":
            ctx.phase("publish", 0)
            X = _get(req, "X")[-m2:]
            x = site.counts(X)
            out = SiteResult(
                floor_counts(x),
                x,
                _get(req, "X"),
                {"converged": req["converged"]},
                [],
                stats.as_dict(),
            )
            if ids is not None:
                await publish_b(ctx, peer, site.D, out.counts_floor, ids, seed)
            return out
        ctx.phase("lm", int(req.get("it", 0)))
        if op == "point":
            ok = site.set_point(_get(req, "X"), _get(req, "W"))
            body: dict[str, Any] = {"ok": ok}
            if ok:
                g, e, h0 = site.item_stats()
                body.update(s=_arr(site.sums()), gtw=_arr(g), eta=_arr(e), h0=_arr(h0))
        elif op == "gram":
            weights = _get(req, "weights")
            if req.get("protocol") == "per_entry":
                if "m1" not in req:
                    raise ValueError("site_b: per-entry gram request lacks m1")
                await gram_cross_per_entry_bob(
                    ctx,
                    peer,
                    pub,
                    site.D,
                    np.abs(site.beta),
                    len(weights),
                    int(req["m1"]),
                    stats=stats,
                )
            else:
                await gram_cross_bob(ctx, peer, pub, site.D, np.abs(site.beta), stats=stats)
            body = {"gamma_bb": _arr(site.gram(weights))}
        elif op == "gt":
            body = {"out": _arr(site.gt(_get(req, "V")))}
        elif op == "gapply":
            body = {"out": _arr(site.gapply(_get(req, "M").reshape(m2, -1)))}
        elif op == "gsq":
            body = {"out": _arr(site.gsq(_get(req, "v")))}
        else:
            raise ValueError(f"site_b: unknown op {op!r} from {peer}")
        await ctx.send(peer, "txpub.resp", codec.dumps(body))


# ----------------------------------------------------------------------------- driver
def run_gs_two_sites(
    data: TxData,
    eps: float,
    delta: float,
    *,
    mode: str = "fb",
    form: str = "v",
    key_bits: int = 2048,
    protocol: str = "optimized",
    max_iter: int = 2000,
    tol: float = 1e-10,
    timeout: float = 3600.0,
    seed: int | None = 0,
    workers: int = 1,
    method: str = "newton",
) -> dict[str, Any]:
    """Run site A and site B over an in-memory network; return published counts and metrics.

    Keys: counts (floored, A then B), counts_real, lm (solver summary), history (per LM
    iteration: seconds, bytes_A, bytes_B, messages, gram_calls, ...), seconds, protocol_A/B
    (Paillier operation counts), ledger (bytes/messages per party, phase, round), feasible,
    published (the joined sampled table: ids, table, counts).
    """
    from parties.runtime.memlink import MemoryNetwork

    th = theta(eps, delta)
    net = MemoryNetwork(["A", "B"], timeout=timeout)
    ca, cb = CountingContext(net.context("A")), CountingContext(net.context("B"))

    async def go():
        return await asyncio.gather(
            site_a(
                ca,
                data.site("A"),
                th,
                mode=mode,
                form=form,
                key_bits=key_bits,
                protocol=protocol,
                max_iter=max_iter,
                tol=tol,
                ids=data.ids,
                seed=seed,
                workers=workers,
                method=method,
            ),
            site_b(cb, data.site("B"), form=form, ids=data.ids, seed=seed, key_bits=key_bits),
        )

    t0 = time.perf_counter()
    ra, rb = asyncio.run(go())
    seconds = time.perf_counter() - t0
    per_iter: dict[int, dict[str, float]] = {}
    for who, c in (("A", ca), ("B", cb)):
        for (ph, rnd), v in c.ledger.items():
            if ph == "lm":
                d = per_iter.setdefault(rnd, {"bytes_A": 0, "bytes_B": 0, "messages": 0})
                d[f"bytes_{who}"] += v["bytes"]
                d["messages"] += v["messages"]
    for h in ra.history:
        h.update(per_iter.get(h["iter"], {}))
    counts = np.concatenate([ra.counts_floor, rb.counts_floor])
    return {
        "counts": counts,
        "counts_real": np.concatenate([ra.counts, rb.counts]),
        "lm": ra.lm,
        "history": ra.history,
        "seconds": seconds,
        "protocol_A": ra.protocol,
        "protocol_B": rb.protocol,
        "published": ra.published,
        "ledger": {
            f"{who}:{ph}:{r}": v
            for who, c in (("A", ca), ("B", cb))
            for (ph, r), v in c.ledger.items()
        },
        "feasible": check_feasible(data.D, counts, eps, delta).as_dict(),
    }
