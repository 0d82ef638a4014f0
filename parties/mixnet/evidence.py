"""Signed mix-net messages, so that equivocation can be proven to the other servers and to
``sdp verify`` rather than blamed on whoever reports it (issue 25, items 5 and 7).

A party signs ``mpc.mixnet.schema.signed_statement(kind, session, party, digest)`` with its
Ed25519 key (the key of its TLS certificate: ``ctx.signer``; every party's public key is
``ctx.public_keys``). Two valid signatures of one party over different digests of the same
``kind`` and session are proof that it equivocated; a report carrying a "signature" of another
party that does not verify is proof that its signer lied.
"""

from __future__ import annotations

from typing import Any

from mpc.mixnet.schema import signed_statement
from parties.mixnet.state import MixnetAbort
from parties.verify.evidence import digest


def sign(ctx: Any, kind: str, session: str, dg: str) -> bytes:
    """This party's signature of ``(kind, session, its name, dg)``."""
    signer = getattr(ctx, "signer", None)
    if signer is None:
        raise MixnetAbort(f"{ctx.name}: this party has no signing key")
    return bytes(signer.sign(signed_statement(kind, session, ctx.name, dg)))


def sign_step(ctx: Any, session: str, step: dict[str, Any]) -> dict[str, Any]:
    """The mix step with its mixer's signature (over the step without ``sig``)."""
    body = {k: v for k, v in step.items() if k != "sig"}
    return {**body, "sig": sign(ctx, "mix", session, digest(body))}
