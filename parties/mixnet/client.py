"""The client party of a mix-net run: get the joint key, encrypt and prove every user's
messages (``mpc.mixnet.submission``), submit them to every server (``mix.submissions``)."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

import numpy as np

from mpc.mixnet.proof_checks import verify_dkg
from mpc.mixnet.schema import VerifyError
from mpc.mixnet.submission import make_submissions
from mpc.pools import process_pool
from parties.mixnet.evidence import sign
from parties.mixnet.state import MixnetAbort, MixnetConfig, session_of
from parties.runtime import codec
from parties.runtime.link import PartyContext, PeerError
from parties.runtime.receive import recv_all
from parties.verify.evidence import digest


async def receive_key(ctx: PartyContext, cfg: MixnetConfig) -> tuple[bytes, bytes, dict[str, Any]]:
    """Client side: the joint key every live server announced; returns (pk, session, dkg)."""
    ctx.phase("mix.key")
    seen: dict[bytes, dict[str, Any]] = {}
    for raw in (await recv_all(ctx, cfg.servers, "mix.key", cfg.patience)).values():
        if isinstance(raw, PeerError):
            continue
        try:
            dkg = codec.loads(raw)["dkg"]
            seen[codec.dumps(dkg)] = dkg
        except (ValueError, KeyError, TypeError):
            continue  # a garbled announcement counts as a dead server
    if len(seen) != 1:
        raise MixnetAbort(f"{ctx.name}: servers announced {len(seen)} different keys")
    dkg = next(iter(seen.values()))
    try:  # the key must follow from the published commitments and complaints
        verify_dkg(cfg.session_id, len(cfg.servers), cfg.t, dkg)
    except VerifyError as exc:
        raise MixnetAbort(f"{ctx.name}: announced key does not verify: {exc}") from None
    return dkg["pk"], session_of(cfg, dkg), dkg


async def run_clients(
    ctx: PartyContext,
    cfg: MixnetConfig,
    batches: dict[str, np.ndarray],
    owners: dict[str, list[str]] | None = None,
    tamper: Any = None,
    pool: Executor | None = None,
    users: int | None = None,
) -> list[dict[str, Any]]:
    """The client party: get the key, encrypt and prove, send to every server.

    ``users``: how many users this party submits for (default: the distinct owners); it is
    public, part of the submission message (``{users, submissions}``), and what the privacy
    gate counts. ``tamper`` (tests: malicious clients) maps the submission list before sending.
    """
    pk, sess, _ = await receive_key(ctx, cfg)
    ctx.phase("mix.submit")
    own = process_pool(cfg.workers) if pool is None and cfg.workers > 1 else None
    # the servers wait for this party's submissions while it encrypts and proves: it tells them
    # it is at work (parties.runtime.busy), so a slow client party is not taken for a silent one
    beat = ctx.busy(cfg.servers, "encrypt+prove")
    try:
        subs = make_submissions(
            sess, pk, cfg.layouts(), batches, owners, cfg.workers, pool or own, party=ctx.name
        )
    finally:
        beat.stop()
        if own is not None:
            own.shutdown()
    if tamper is not None:
        subs = tamper(subs, sess, pk)
    if users is None:
        users = len({s["client"] for s in subs})
    body = {"users": int(users), "submissions": subs}
    sig = sign(ctx, "inputs", cfg.session_id, digest(body))
    payload = codec.dumps({**body, "sig": sig})
    for i, s in enumerate(cfg.servers, 1):
        try:
            await ctx.send(s, "mix.submissions", payload, public=True)
        except PeerError:
            continue
        finally:
            ctx.progress("submissions sent to servers", i, len(cfg.servers))
    return subs
