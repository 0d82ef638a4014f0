"""Seed 001 publication (Algorithm 1 steps 2-3) and the LS sites, over PartyContext.

``publish_a`` / ``publish_b``: each site samples its items with its floored counts, B sends its
sample (it is published), A joins the samples by transaction id. ``ls_site_a`` /
``ls_site_b``: the local solution (no protocol), then the same publication. ``SiteResult`` is
what a site ends with (also used by the GS sites in ``parties.txpub.gs_sites``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parties.runtime import codec
from protocols.txpub.local_solution import join_sites, sample_site, solve_site


@dataclass
class SiteResult:
    """What a site ends with: its own floored counts, the public final iterate, metrics."""

    counts_floor: np.ndarray
    counts: np.ndarray
    X_public: np.ndarray
    lm: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    protocol: dict[str, Any] = field(default_factory=dict)
    ledger: dict[str, Any] = field(default_factory=dict)
    published: dict[str, Any] | None = None  # at A: joined sample (ids, table, counts)


async def publish_a(
    ctx: Any, peer: str, D_A: np.ndarray, counts_a: np.ndarray, ids: np.ndarray, seed: int | None
) -> dict[str, Any]:
    """Algorithm 1 steps 2-3 at A: sample A's items, receive B's sample and counts, join by id."""
    ctx.phase("publish", 1)
    O_a = sample_site(D_A, counts_a, np.random.default_rng(seed))
    msg = codec.loads(await ctx.recv(peer, "txpub.sample"))
    ids_b = codec.obj_to_array(msg["ids"])
    O_b = codec.obj_to_array(msg["table"]).astype(bool)
    counts_b = codec.obj_to_array(msg["counts"]).astype(float)
    if O_b.shape != (len(ids_b), len(counts_b)) or (O_b.sum(axis=0) != counts_b).any():
        raise ValueError(f"publish_a: {peer}'s sample does not match its published counts")
    ids_o, table = join_sites(np.asarray(ids), O_a, ids_b, O_b)
    return {"ids": ids_o, "table": table, "counts": np.concatenate([counts_a, counts_b])}


async def publish_b(
    ctx: Any, peer: str, D_B: np.ndarray, counts_b: np.ndarray, ids: np.ndarray, seed: int | None
) -> None:
    """Algorithm 1 step 2 at B: sample B's items and send the sample (it is published)."""
    ctx.phase("publish", 1)
    rng = np.random.default_rng(None if seed is None else seed + 1)
    O_b = sample_site(D_B, counts_b, rng)
    await ctx.send(
        peer,
        "txpub.sample",
        codec.dumps(
            {
                "ids": codec.array_to_obj(np.asarray(ids, dtype="<i8")),
                "table": codec.array_to_obj(O_b.astype("|u1")),
                "counts": codec.array_to_obj(np.asarray(counts_b, dtype="<f8")),
            }
        ),
        public=True,
    )


async def ls_site_a(
    ctx: Any,
    D_A: np.ndarray,
    eps: float,
    delta: float,
    ids: np.ndarray,
    *,
    peer: str = "B",
    theta_mode: str = "paper",
    seed: int | None = None,
) -> SiteResult:
    """LS at A: solve locally (no protocol), sample, receive B's sample, join by id."""
    ctx.phase("ls", 0)
    r = solve_site(D_A, eps, delta, theta_mode)
    out = SiteResult(
        r.counts_floor, r.counts, r.counts, {"seconds": r.seconds, "theta_s": r.theta_s}
    )
    out.published = await publish_a(ctx, peer, D_A, r.counts_floor, ids, seed)
    return out


async def ls_site_b(
    ctx: Any,
    D_B: np.ndarray,
    eps: float,
    delta: float,
    ids: np.ndarray,
    *,
    peer: str = "A",
    theta_mode: str = "paper",
    seed: int | None = None,
) -> SiteResult:
    """LS at B: solve locally, sample, send the sample to A."""
    ctx.phase("ls", 0)
    r = solve_site(D_B, eps, delta, theta_mode)
    await publish_b(ctx, peer, D_B, r.counts_floor, ids, seed)
    return SiteResult(
        r.counts_floor, r.counts, r.counts, {"seconds": r.seconds, "theta_s": r.theta_s}
    )
