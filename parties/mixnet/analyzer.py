"""The analyzer's side of a mix-net run: receive the shuffled plaintext batches (``mix.result``)."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import numpy as np

from parties.mixnet.state import MixnetAbort, MixnetConfig
from parties.runtime import codec
from parties.runtime.link import PartyContext
from parties.runtime.receive import recv_first_then_rest

log = logging.getLogger("parties.mixnet")


async def receive_result(ctx: PartyContext, cfg: MixnetConfig) -> tuple[dict[str, np.ndarray], int]:
    """Analyzer side: the shuffled plaintext batches (valid rows only) and the number of users
    whose submissions arrived whole (the servers count it from the accepted submissions; the
    verifier recounts it from the record).

    Every result received must be identical (aborts of a minority, e.g. a cheating server that
    was excluded, are logged); with none, raises ``MixnetAbort``. The public verifier checks
    the result against the record.
    """
    ctx.phase("mix.result")
    got: dict[bytes, Any] = {}  # by the result's SHA-256 (a message of more than one chunk
    # arrives as a bytearray, which is not hashable; and a digest keeps no second copy)
    for raw in await recv_first_then_rest(
        ctx, cfg.servers, "mix.result", cfg.mix_patience * (len(cfg.servers) + 1), cfg.patience
    ):
        msg = codec.loads(raw)
        if not (isinstance(msg, dict) and "delegated" in msg):
            got[hashlib.sha256(raw).digest()] = msg
    aborts = {v["abort"] for v in got.values() if isinstance(v, dict) and "abort" in v}
    got = {k: v for k, v in got.items() if not (isinstance(v, dict) and "abort" in v)}
    if aborts:
        log.warning("%s: servers aborted: %s", ctx.name, sorted(aborts))
    if not got:
        raise MixnetAbort(f"{ctx.name}: no result; servers aborted: {sorted(aborts)}")
    if len(got) != 1:
        raise MixnetAbort(f"{ctx.name}: received {len(got)} different results from the servers")
    res = next(iter(got.values()))
    try:
        out = {}
        for name, obj in res["batches"].items():
            rows = codec.obj_to_array(obj["rows"])
            valid = codec.obj_to_array(obj["valid"]).astype(bool)
            out[name] = rows[valid]
        users = int(res["users"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MixnetAbort(f"{ctx.name}: malformed mix.result: {exc}") from None
    return out, users
