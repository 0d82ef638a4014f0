"""Seed 001 GS as two parties: site A (master, Paillier key owner) and site B, over PartyContext.

``site_a(ctx, ...)`` runs the LM solver of ``global_solution`` with a ``SecureOracle``: every
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
  A's ciphertexts (IND-CPA under the short-exponent assumption of ``mpc.paillier``).
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

from mpc.paillier import FastPaillier, PublicFixedBase
from mpc.scalar_product import (
    ProtocolStats,
    gram_cross_alice,
    gram_cross_bob,
    gram_cross_per_entry_alice,
    gram_cross_per_entry_bob,
)
from parties.runtime import codec
from protocols.txpub import global_solution as gsol
from protocols.txpub import lm
from protocols.txpub.model import TxData, check_feasible, floor_counts, reference_solve, theta
from protocols.txpub.publish import SiteResult, ls_site_a, ls_site_b, publish_a, publish_b


# ----------------------------------------------------------------------------- cost ledger
class CountingContext:
    """Wraps a PartyContext; counts bytes and messages sent per (phase, round)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.name = ctx.name
        self.cur = ("setup", 0)
        self.ledger: dict[tuple[str, int], dict[str, float]] = {}

    def phase(self, name: str, round: int = 0) -> None:
        self.cur = (name, round)
        self.ctx.phase(name, round)

    def _rec(self) -> dict[str, float]:
        return self.ledger.setdefault(self.cur, {"bytes": 0, "messages": 0})

    async def send(self, peer: str, msg_type: str, payload: bytes, *, public: bool = False) -> None:
        r = self._rec()
        r["bytes"] += len(payload)
        r["messages"] += 1
        await self.ctx.send(peer, msg_type, payload, public=public)

    async def recv(self, peer: str, msg_type: str) -> bytes:
        return await self.ctx.recv(peer, msg_type)


# ----------------------------------------------------------------------------- local site data
class SiteState:
    """One site's private columns and the local parts of every oracle quantity."""

    def __init__(self, D: np.ndarray, form: str) -> None:
        self.D = np.asarray(D, dtype=bool)
        self.Df = self.D.astype(float)
        self.C = self.D.sum(axis=0).astype(float)
        if (self.C <= 0).any():
            raise ValueError("SiteState: every item needs a positive support count")
        if form not in lm.FORMS:
            raise ValueError(f"SiteState: unknown form {form!r}")
        self.form = form

    def set_point(self, X: np.ndarray, W: np.ndarray) -> bool:
        if len(X) != self.D.shape[1] or len(W) != self.D.shape[0]:
            raise ValueError("SiteState.set_point: iterate has the wrong shape")
        if self.form == "x" and (X >= self.C).any():
            return False
        self.X, self.W = X, W
        self.beta = 1.0 / (X - self.C) if self.form == "x" else -1.0 / self.C
        return True

    def sums(self) -> np.ndarray:
        return self.Df @ lm.log_terms(self.X, self.C, self.form)

    def item_stats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return lm.item_terms(self.Df.T @ self.W, self.X, self.C, self.form)

    def gram(self, weights: np.ndarray) -> np.ndarray:
        out = np.stack([(self.Df * w[:, None]).T @ self.Df for w in weights])
        return out * np.outer(self.beta, self.beta)[None]

    def gt(self, V: np.ndarray) -> np.ndarray:
        return self.beta[:, None] * (self.Df.T @ V)

    def gapply(self, M: np.ndarray) -> np.ndarray:
        return self.Df @ (self.beta[:, None] * M)

    def gsq(self, v: np.ndarray) -> np.ndarray:
        return self.Df @ (self.beta**2 * v)

    def counts(self, X: np.ndarray) -> np.ndarray:
        return X if self.form == "x" else self.C * -np.expm1(-X / self.C)


def _arr(a: np.ndarray) -> dict:
    return codec.array_to_obj(np.ascontiguousarray(a, dtype="<f8"))


def _get(obj: dict, key: str) -> np.ndarray:
    if not isinstance(obj, dict) or key not in obj:
        raise ValueError(f"txpub: message lacks field {key!r}")
    return codec.obj_to_array(obj[key]).astype(float)


# ----------------------------------------------------------------------------- oracle at A
class SecureOracle:
    """The GS oracle at site A: local A parts + B's parts by request + Paillier cross Grams."""

    def __init__(
        self,
        ctx: Any,
        peer: str,
        site: SiteState,
        fp: FastPaillier,
        m2: int,
        protocol: str = "optimized",
        workers: int = 1,
    ) -> None:
        if protocol not in ("optimized", "per_entry"):
            raise ValueError(
                f"SecureOracle: protocol must be optimized|per_entry, got {protocol!r}"
            )
        self.ctx, self.peer, self.site, self.fp = ctx, peer, site, fp
        self.m1, self.m2 = site.D.shape[1], m2
        self.n, self.m = site.D.shape[0], self.m1 + m2
        self.protocol = protocol
        self.workers = workers
        self.stats = ProtocolStats()
        self.iteration = -1  # first set_point marks phase ("lm", 0)
        self.iter_stats: dict[int, dict[str, float]] = {}

    async def _ask(self, op: str, **arrays: np.ndarray) -> dict:
        body = {"op": op, "it": self.iteration}
        body.update({k: _arr(v) for k, v in arrays.items()})
        await self.ctx.send(self.peer, "txpub.req", codec.dumps(body))
        return codec.loads(await self.ctx.recv(self.peer, "txpub.resp"))

    def begin_iteration(self, iteration: int) -> None:
        """Called by the LM loop before computing the step of ``iteration``."""
        self._mark(iteration)

    def _mark(self, iteration: int) -> None:
        if iteration != self.iteration:
            self.iteration = iteration
            self.ctx.phase("lm", iteration)

    async def set_point(self, X, W, U, iteration, trial):  # noqa: D102
        self._mark(iteration)
        ok_a = self.site.set_point(X[: self.m1], W)
        resp = await self._ask("point", X=X[self.m1 :], W=W)
        if not (ok_a and bool(resp["ok"])):
            return False
        self.sB = _get(resp, "s")
        self.itemB = (_get(resp, "gtw"), _get(resp, "eta"), _get(resp, "h0"))
        return True

    async def sums(self):  # noqa: D102
        return self.site.sums() + self.sB

    async def item_stats(self):  # noqa: D102
        a = self.site.item_stats()
        return tuple(np.concatenate([x, y]) for x, y in zip(a, self.itemB))

    async def gram(self, weights):  # noqa: D102
        weights = np.atleast_2d(weights)
        # split signed weights: Gamma(c) = Gamma(c+) - Gamma(c-)
        pos, neg = np.maximum(weights, 0.0), np.maximum(-weights, 0.0)
        signed = neg.any(axis=1)
        stack = np.concatenate([pos, neg[signed]])
        t0 = time.perf_counter()
        await self.ctx.send(
            self.peer,
            "txpub.req",
            codec.dumps(
                {
                    "op": "gram",
                    "it": self.iteration,
                    "weights": _arr(stack),
                    "protocol": self.protocol,
                    "m1": self.m1,
                }
            ),
        )
        GA_abs = self.site.Df * np.abs(self.site.beta)[None, :]
        if self.protocol == "optimized":
            cross = await gram_cross_alice(
                self.ctx,
                self.peer,
                self.fp,
                stack,
                GA_abs,
                stats=self.stats,
                workers=self.workers,
            )
        else:
            cross = await gram_cross_per_entry_alice(
                self.ctx, self.peer, self.fp, stack, GA_abs, self.m2, stats=self.stats
            )
        resp = codec.loads(await self.ctx.recv(self.peer, "txpub.resp"))
        gbb = _get(resp, "gamma_bb").reshape(len(stack), self.m2, self.m2)
        gaa = self.site.gram(stack)
        full = np.zeros((len(stack), self.m, self.m))
        full[:, : self.m1, : self.m1] = gaa
        full[:, self.m1 :, self.m1 :] = gbb
        full[:, : self.m1, self.m1 :] = cross
        full[:, self.m1 :, : self.m1] = cross.transpose(0, 2, 1)
        out = full[: len(weights)].copy()
        out[signed] -= full[len(weights) :]
        rec = self.iter_stats.setdefault(self.iteration, {"gram_calls": 0, "gram_seconds": 0.0})
        rec["gram_calls"] += 1
        rec["gram_seconds"] += time.perf_counter() - t0
        return out

    async def gt(self, V):  # noqa: D102
        resp = await self._ask("gt", V=V)
        return np.concatenate([self.site.gt(V), _get(resp, "out").reshape(self.m2, -1)])

    async def gapply(self, M):  # noqa: D102
        resp = await self._ask("gapply", M=M[self.m1 :])
        return self.site.gapply(M[: self.m1]) + _get(resp, "out").reshape(self.n, -1)

    async def gsq(self, v):  # noqa: D102
        resp = await self._ask("gsq", v=v[self.m1 :])
        return self.site.gsq(v[: self.m1]) + _get(resp, "out")


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
) -> SiteResult:
    """Site B: answers A's requests with its local parts; joins the Paillier protocols."""
    ctx.phase("setup", 0)
    site = SiteState(D_B, form)
    pub = PublicFixedBase.from_dict(codec.loads(await ctx.recv(peer, "txpub.key")))
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
            site_b(cb, data.site("B"), form=form, ids=data.ids, seed=seed),
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


def gs_plain(
    data: TxData,
    eps: float,
    delta: float,
    *,
    mode: str = "fb",
    form: str = "v",
    max_iter: int = 2000,
    tol: float = 1e-10,
    method: str = "newton",
) -> dict[str, Any]:
    """Plaintext GS ('simulated parties', same solver, ``PlainOracle``); ``method`` as in
    ``global_solution.gs_solve``."""
    th = theta(eps, delta)
    o = lm.PlainOracle(data.D, form=form)
    t0 = time.perf_counter()
    if mode == "fb":
        res = asyncio.run(gsol.gs_solve(o, th, "fb", tol=tol, max_iter=max_iter, method=method))
    else:
        res = asyncio.run(lm.lm_solve(o, th, "paper", tol=tol, max_iter=max_iter))
    x = o.to_counts(res.X)
    return {
        "counts": floor_counts(x),
        "counts_real": x,
        "lm": res.summary(),
        "W": res.W,
        "seconds": time.perf_counter() - t0,
        "kkt": gsol.kkt_check(data.D, data.counts, th, x, res.W).as_dict(),
        "feasible": check_feasible(data.D, floor_counts(x), eps, delta).as_dict(),
    }


def reference_counts(data: TxData, eps: float, delta: float) -> np.ndarray:
    """Centralized reference optimum (unfloored)."""
    return reference_solve(data.D, theta(eps, delta))


# ----------------------------------------------------------------------------- runtime entry
PARTY_DEFAULTS: dict[str, Any] = {
    "dataset": "t10i4d100k",
    "transactions": 2000,
    "items": 20,
    "epsilon": 0.336,
    "delta": 0.5,
    "solver": "gs",
    "mode": "fb",
    "form": "v",
    "key_bits": 2048,
    "protocol": "optimized",
    "theta_mode": "paper",
    "seed": 0,
    "workers": 1,
    "method": "newton",
}


def load_dataset(params: dict[str, Any]) -> TxData:
    """The table both parties derive deterministically from ``params`` (each keeps its columns)."""
    from protocols.txpub.data import generate, load_fimi

    n, m, seed = int(params["transactions"]), int(params["items"]), int(params["seed"])
    if params["dataset"] == "t10i4d100k":
        return load_fimi(n=n, m=m, seed=seed)
    if params["dataset"] == "synthetic":
        scale = m / 50.0
        return generate(n=n, m=m, avg_a=5.66 * scale, avg_b=4.13 * scale, seed=seed)
    raise ValueError(f"txpub: unknown dataset {params['dataset']!r} (t10i4d100k | synthetic)")


async def party_main(ctx: Any, role: str, params: dict[str, Any]) -> dict[str, Any]:
    """Entry point for the party runtime: ``role`` 'A' or 'B'; returns a JSON-able result.

    Each party loads the table from ``params`` (see ``PARTY_DEFAULTS``) and keeps only its own
    columns; A's result holds the published counts, the joined sample size, the LM summary and
    per-iteration history (seconds, bytes, Paillier operation counts).
    """
    p = {**PARTY_DEFAULTS, **params}
    unknown = set(params) - set(PARTY_DEFAULTS)
    if unknown:
        raise ValueError(f"txpub: unknown parameters {sorted(unknown)}")
    if role not in ("A", "B"):
        raise ValueError(f"txpub: role must be 'A' or 'B', got {role!r}")
    data = load_dataset(p)
    eps, delta = float(p["epsilon"]), float(p["delta"])
    peer = "B" if role == "A" else "A"
    cols = data.site(role)
    if p["solver"] == "ls":
        fn = ls_site_a if role == "A" else ls_site_b
        r = await fn(
            ctx,
            cols,
            eps,
            delta,
            data.ids,
            peer=peer,
            theta_mode=p["theta_mode"],
            seed=int(p["seed"]),
        )
    elif p["solver"] == "gs":
        if role == "A":
            r = await site_a(
                ctx,
                cols,
                theta(eps, delta),
                peer=peer,
                mode=p["mode"],
                form=p["form"],
                key_bits=int(p["key_bits"]),
                protocol=p["protocol"],
                ids=data.ids,
                seed=int(p["seed"]),
                workers=int(p["workers"]),
                method=p["method"],
            )
        else:
            r = await site_b(
                ctx, cols, peer=peer, form=p["form"], ids=data.ids, seed=int(p["seed"])
            )
    else:
        raise ValueError(f"txpub: solver must be 'gs' or 'ls', got {p['solver']!r}")
    out: dict[str, Any] = {
        "role": role,
        "counts_own": r.counts_floor.tolist(),
        "counts_own_continuous": np.asarray(r.counts, dtype=float).tolist(),
        "lm": r.lm,
        "protocol": r.protocol,
    }
    if r.published is not None:
        out["counts"] = r.published["counts"].tolist()
        out["published_rows"] = int(len(r.published["ids"]))
        out["feasible"] = (
            check_feasible(data.D, r.published["counts"], eps, delta).as_dict()
            if role == "A"
            else None
        )  # evaluation only (the launcher's 'truth'), not a party step
        out["history"] = r.history
    return out
