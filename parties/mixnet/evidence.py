"""Signed mix-net messages, so that equivocation can be proven to the other servers and to
``sdp verify`` rather than blamed on whoever reports it (issue 25, items 5 and 7).

A party signs ``mpc.mixnet.schema.signed_statement(kind, session, party, digest)`` with its
Ed25519 key (the key of its TLS certificate: ``ctx.signer``; every party's public key is
``ctx.public_keys``). Two valid signatures of one party over different digests of the same
``kind`` and session are proof that it equivocated; a report carrying a "signature" of another
party that does not verify is proof that its signer lied.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mpc.mixnet.schema import signed_statement
from parties.mixnet.state import MixnetAbort
from parties.runtime import codec
from parties.runtime.signing import verify_signature


def digest(obj: Any) -> str:
    """SHA-256 hex of an object's canonical encoding."""
    return hashlib.sha256(codec.dumps(obj)).hexdigest()


def sign(ctx: Any, kind: str, session: str, dg: str) -> bytes:
    """This party's signature of ``(kind, session, its name, dg)``."""
    signer = getattr(ctx, "signer", None)
    if signer is None:
        raise MixnetAbort(f"{ctx.name}: this party has no signing key")
    return bytes(signer.sign(signed_statement(kind, session, ctx.name, dg)))


def signed_by(
    keys: dict[str, bytes], party: str, kind: str, session: str, dg: Any, sig: Any
) -> bool:
    """True iff ``sig`` is ``party``'s valid signature of ``(kind, session, party, dg)``."""
    key = keys.get(party)
    if key is None or not isinstance(dg, str) or not isinstance(sig, bytes):
        return False
    return verify_signature(key, signed_statement(kind, session, party, dg), sig)


def sign_step(ctx: Any, session: str, step: dict[str, Any]) -> dict[str, Any]:
    """The mix step with its mixer's signature (over the step without ``sig``)."""
    body = {k: v for k, v in step.items() if k != "sig"}
    return {**body, "sig": sign(ctx, "mix", session, digest(body))}


def step_header(step: dict[str, Any]) -> dict[str, Any]:
    """``{server, digest, sig}``: what the next mixer names as the step it built on."""
    body = {k: v for k, v in step.items() if k != "sig"}
    return {"server": step["server"], "digest": digest(body), "sig": step.get("sig")}


def step_signed(keys: dict[str, bytes], servers: list[str], session: str, head: Any) -> bool:
    """True iff ``head`` (a ``step_header``) is signed by the server it names."""
    if not isinstance(head, dict) or not isinstance(head.get("server"), int):
        return False
    j = head["server"]
    if not 1 <= j <= len(servers):
        return False
    return signed_by(keys, servers[j - 1], "mix", session, head.get("digest"), head.get("sig"))
