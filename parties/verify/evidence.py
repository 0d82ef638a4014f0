"""Checks of the signed evidence of mix-net runs, shared by the mix servers (during the run)
and ``sdp verify`` (afterwards): who signed a client list, a server's input report or a mix
step, and whether a piece of evidence proves a server's lie or a party's equivocation
(``parties.mixnet.inputs``, ``parties.mixnet.evidence``). Statements are
``mpc.mixnet.schema.signed_statement``; signatures are Ed25519 under the keys of the parties'
certificates.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mpc.mixnet.schema import signed_statement
from parties.runtime import codec
from parties.runtime.signing import verify_signature


def digest(obj: Any) -> str:
    """SHA-256 hex of an object's canonical encoding."""
    return hashlib.sha256(codec.dumps(obj)).hexdigest()


def signed_by(
    keys: dict[str, bytes], party: str, kind: str, session: str, dg: Any, sig: Any
) -> bool:
    """True iff ``sig`` is ``party``'s valid signature of ``(kind, session, party, dg)``."""
    key = keys.get(party)
    if key is None or not isinstance(dg, str) or not isinstance(sig, bytes):
        return False
    return verify_signature(key, signed_statement(kind, session, party, dg), sig)


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


def list_digest(submissions: list[Any], users: int) -> str:
    """What a client party signs: the digest of ``{users, submissions}``."""
    return digest({"users": users, "submissions": submissions})


def entry_signed(keys: dict[str, bytes], session: str, party: str, entry: Any) -> bool:
    """A report entry ``{digest, sig}`` carries ``party``'s signature of its list digest."""
    return isinstance(entry, dict) and signed_by(
        keys, party, "inputs", session, entry.get("digest"), entry.get("sig")
    )


def proves_lie(
    keys: dict[str, bytes], session: str, clients: list[str], server: str, signed: Any
) -> str | None:
    """If ``signed`` (``{report, sig}``) is ``server``'s signed report giving some client party
    a list that party never signed: that party's name; else None."""
    if not isinstance(signed, dict) or not isinstance(signed.get("report"), dict):
        return None
    report = signed["report"]
    if not signed_by(keys, server, "report", session, digest(report), signed.get("sig")):
        return None
    for c in clients:
        if report.get(c) is not None and not entry_signed(keys, session, c, report[c]):
            return c
    return None


def proves_equivocation(keys: dict[str, bytes], session: str, party: str, pair: Any) -> bool:
    """``pair`` holds two entries with different digests, both signed by ``party``."""
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and all(entry_signed(keys, session, party, e) for e in pair)
        and pair[0]["digest"] != pair[1]["digest"]
    )


def proves_step_equivocation(
    keys: dict[str, bytes], servers: list[str], session: str, ev: Any
) -> int | None:
    """If ``ev`` (``{"equivocation": [header, header]}``) holds two different mix-step headers
    both signed by one server: that server's index; else None."""
    pair = ev.get("equivocation") if isinstance(ev, dict) else None
    if not (isinstance(pair, list) and len(pair) == 2):
        return None
    if not all(step_signed(keys, servers, session, h) for h in pair):
        return None
    a, b = pair
    if a["server"] != b["server"] or a["digest"] == b["digest"]:
        return None
    return int(a["server"])
