"""Site A's GS oracle for seed 001: A's local parts, B's parts by request, Paillier cross Grams.

``SecureOracle`` implements the oracle interface of the LM/Newton solver
(``protocols.txpub.lm``): at every iterate it asks site B for B's local parts (``txpub.req`` /
``txpub.resp``) and computes the A x B cross blocks of the weighted Gram matrices with the
Paillier exchange (``parties.txpub.paillier_exchange``). ``CountingContext`` wraps a party
context and counts the bytes and messages each site sends per (phase, round).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mpc.paillier import FastPaillier
from mpc.scalar_product import ProtocolStats
from parties.runtime import codec
from parties.txpub.paillier_exchange import gram_cross_alice, gram_cross_per_entry_alice
from protocols.txpub.site_state import SiteState


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
