"""Signed input evidence of the MPC shuffler (issue 37): a refused sharing names its culprit.

Client side (``send_shares``): per block, the client party commits to each server's salted
shares and to the openings of the block's check (``mpc.input_commit``), signs the statement
with its Ed25519 key and sends server j its shares with the statement, its salt and its mask
shares. Server side, in mode ``malicious-abort``: ``accept_block`` refuses (as malformed, at
receipt) a block whose data do not hash to the client's digest for this server or whose
statement is not signed; after the servers agreed on the accepted clients, ``exchange_reports``
has each server sign and send to every other its report (the statements, and a complaint with
the block's data if an opening does not match its shares), echoes a digest of what it received
(a server sending different reports makes the run abort), and ``parties.verify.mpc_inputs.
judge_all`` gives every server the same verdict: a convicted client is refused and named, a
convicted server makes the run abort (``InputAbort``, with the signed reports as evidence,
which ``sdp verify`` re-judges: spec V-31).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc import input_commit, shamir
from mpc.mac_check import coins
from mpc.mixnet.schema import signed_statement
from mpc.shamir import PRIME
from parties.mpc_shuffle.mpyc_runtime import MPCServerError
from parties.mpc_shuffle.wire import MSG_OUTPUT, MSG_SHARES, MPCShufflerConfig, send_chunked
from parties.runtime import codec, fault_hooks
from parties.runtime.link import PartyContext
from parties.verify.evidence import digest
from parties.verify.mpc_inputs import (
    REPORT_KIND,
    STATEMENT_KIND,
    Verdict,
    judge_all,
    statement_valid,
)

Block = tuple[dict[str, np.ndarray], dict[str, Any]]  # one block's shares, its evidence


class InputAbort(MPCServerError):
    """A server deviated in the input check (``culprit``; ``evidence``: the signed reports)."""

    def __init__(self, message: str, culprit: str, evidence: dict[str, Any]) -> None:
        super().__init__(message)
        self.culprit = culprit
        self.evidence = evidence


def _sign(ctx: PartyContext, kind: str, session: str, body: dict[str, Any]) -> bytes:
    signer = getattr(ctx, "signer", None)
    if signer is None:
        raise ValueError(f"{ctx.name}: this party has no signing key")
    return bytes(signer.sign(signed_statement(kind, session, ctx.name, digest(body))))


async def send_shares(
    ctx: PartyContext,
    cfg: MPCShufflerConfig,
    per_server: Sequence[dict[str, np.ndarray]],
    meta: dict[str, Any],
    *,
    last: bool,
    block: int,
) -> int:
    """Send server j ``per_server[j]`` (one block) with the signed statement, its salt and
    mask shares (``evidence`` in the block's final piece); returns bytes sent."""
    label = cfg.label
    if fault_hooks.mpc_client_inconsistent(ctx.name):  # tests only: a deviating client
        per_server = [dict(a) for a in per_server]
        name = min(n for n in per_server[-1] if per_server[-1][n].size)
        bad = per_server[-1][name].copy()
        bad.flat[0] = (int(bad.flat[0]) + 1) % PRIME
        per_server[-1][name] = bad
    salts, masks, digests, opened = input_commit.commit_block(
        label, ctx.name, block, cfg.servers, cfg.threshold, per_server
    )
    body = {"client": ctx.name, "block": block, "last": last, "digests": digests, "open": opened}
    statement = {"body": body, "sig": _sign(ctx, STATEMENT_KIND, label.decode(), body)}
    sent = 0
    for j, server in enumerate(cfg.servers):
        ev = {"statement": statement, "salt": salts[j], "mask": masks[j]}
        sent += await send_chunked(
            ctx, server, MSG_SHARES, per_server[j], {**meta, "evidence": ev}, last=last
        )
    return sent


def accept_block(
    ctx: PartyContext, cfg: MPCShufflerConfig, client: str, b: int, final: bool, block: Block
) -> None:
    """At receipt: ValueError unless block ``b`` carries ``client``'s signed statement and this
    server's data hash to the digest the client signed for it."""
    arrays, meta = block
    ev = meta.get("evidence")
    keys: dict[str, bytes] = getattr(ctx, "public_keys", {})
    me = cfg.servers.index(ctx.name)
    st = ev.get("statement") if isinstance(ev, dict) else None
    if not statement_valid(keys, cfg.label.decode(), client, cfg.m, b, st):
        raise ValueError(f"block {b} has no statement signed by {client}")
    if st["body"]["last"] != final:
        raise ValueError(f"block {b}: the signed statement says last={st['body']['last']}")
    salt, mask = ev.get("salt"), ev.get("mask")
    try:
        got = input_commit.share_digest(cfg.label, client, b, me, ctx.name, salt, mask, arrays)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"block {b}: malformed commitment ({exc})") from None
    if got != st["body"]["digests"][me]:
        raise ValueError(f"block {b}: the shares do not match the digest {client} signed")


def _entry(ctx: PartyContext, cfg: MPCShufflerConfig, client: str, blocks: list[Block]) -> dict:
    """This server's report entry on ``client``: its statements and, if the opening the client
    signed for this server differs from what its shares give, a complaint with that block."""
    me = cfg.servers.index(ctx.name)
    sts = [meta["evidence"]["statement"] for _, meta in blocks]
    complaint = None
    shift = fault_hooks.mpc_input_offset(ctx.name, client)  # tests only: a deviating server
    for b, (arrays, meta) in enumerate(blocks):
        body, ev = sts[b]["body"], meta["evidence"]
        seed = input_commit.coin_seed(cfg.label, client, b, body["digests"])
        mine = input_commit.openings(arrays, ev["mask"], seed)
        if shift:
            mine = [(v + shift) % PRIME for v in mine]
        if mine != body["open"][me]:
            complaint = {
                "block": b,
                "salt": ev["salt"],
                "mask": ev["mask"],
                "batches": {
                    k: {"shape": list(a.shape), "data": shamir.to_wire(a)}
                    for k, a in arrays.items()
                },
            }
            break
    return {"statements": sts, "complaint": complaint}


async def exchange_reports(
    rt: Any,
    ctx: PartyContext,
    cfg: MPCShufflerConfig,
    blocks: dict[str, list[Block]],
    clients: Sequence[str],
) -> tuple[list[Verdict], list[Any]]:
    """Sign this server's report on ``clients``, exchange the reports and an echo of their
    digest, and judge; returns (each client's verdict, the m signed reports)."""
    session = cfg.label.decode()
    report = {"server": ctx.name, "clients": {c: _entry(ctx, cfg, c, blocks[c]) for c in clients}}
    signed = {"report": report, "sig": _sign(ctx, REPORT_KIND, session, report)}
    got = await rt.gather(rt.transfer(codec.dumps(signed)))
    seen = hashlib.sha256(b"".join(hashlib.sha256(g).digest() for g in got)).digest()
    echoes = await rt.gather(rt.transfer(seen))
    if any(e != seen for e in echoes):
        raise MPCServerError(
            f"MPC abort: the servers received different input reports (a server sent different "
            f"ones to different servers); {ctx.name} cannot prove which"
        )
    try:
        reports = [codec.loads(g) for g in got]
    except ValueError as exc:
        raise MPCServerError(f"MPC abort: an input report is not CBOR ({exc})") from None
    keys: dict[str, bytes] = getattr(ctx, "public_keys", {})
    return judge_all(keys, cfg.label, cfg.servers, cfg.threshold, reports, clients), reports


def combined_openings(
    seed: bytes, blocks: dict[str, list[Block]], clients: Sequence[str], me: int
) -> list[int]:
    """For ``CheckLog.inputs``: per client and repetition, this server's signed openings of all
    blocks combined with public coins drawn after they were fixed (consistent across the m
    servers iff, except with probability 1/p, every block's openings are)."""
    out = []
    for ci, c in enumerate(clients):
        opened = np.array([m["evidence"]["statement"]["body"]["open"][me] for _, m in blocks[c]])
        gamma = coins(seed, f"inputs|{ci}", (opened.shape[0],))
        out += [int(v) for v in shamir.mul_mod(gamma[:, None], opened).sum(axis=0) % PRIME]
    return out


async def announce_abort(ctx: PartyContext, cfg: MPCShufflerConfig, exc: InputAbort) -> None:
    """Tell the analyzer, in a public entry of this server's signed transcript, who deviated
    and the signed reports that prove it (``sdp verify`` re-judges them)."""
    meta = {"abort": str(exc), "culprit": exc.culprit, "input_evidence": exc.evidence}
    await send_chunked(ctx, cfg.analyzer, MSG_OUTPUT, {}, meta, public=True)
