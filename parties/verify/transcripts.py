"""Transcript checks of ``sdp verify``: every chain and signature, and cross-party consistency.

Independent of the code that wrote the transcripts: it re-implements the schema of
``docs/transcript.md`` with ``hashlib``/``json`` and checks signatures with the ``cryptography``
package (the writers sign with libsodium). Protocol-specific checks (proofs of shuffle,
decryption proofs, recomputing the estimate) live beside this module and register in
``parties.verify.run.PROTOCOL_CHECKS``; they import this module, never a role's code.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

GENESIS_DOMAIN = b"sdp-transcript-v1"
CHECKPOINT_DOMAIN = b"sdp-checkpoint-v1"
ENTRY_KEYS = {"i", "t", "party", "dir", "prev", "hash"}
MESSAGE_DIRS = {"send", "recv"}
CONTROL_TYPES = {"_bye", "_abort"}


@dataclass
class Check:
    """One verification step: name, verdict, what was counted, first failure."""

    name: str
    ok: bool
    count: int = 0
    detail: str = ""


@dataclass
class Report:
    """All checks of a run."""

    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # (receiver, entry index) of messages not in their sender's signed transcript
    unconfirmed: set[tuple[str, int]] = field(default_factory=set)
    trust: str = ""  # where the certificates' fingerprints came from
    anchor: str = ""  # the trust anchor's kind: per-host, one-process (or run directory)
    # senders whose message a receiver signed it had stopped waiting for (left out), in words
    late: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks) and bool(self.checks)

    @property
    def first_failure(self) -> str:
        for c in self.checks:
            if not c.ok:
                return f"{c.name}: {c.detail}"
        return ""

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check


@dataclass
class Transcript:
    """A parsed transcript and the messages it logged."""

    party: str
    entries: list[dict[str, Any]]
    status: str = "?"
    unsigned_tail: int = 0  # entries after the last checkpoint of a party that failed
    cluster: str = ""  # the cluster digest its open entry records

    @property
    def closed_cleanly(self) -> bool:
        """Its last signed entries are ``close`` with status ``ok``."""
        return self.status == "ok" and not self.unsigned_tail


def _canonical(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def public_key(cert_path: Path, name: str) -> ed25519.Ed25519PublicKey:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not cn or cn[0].value != name:
        raise ValueError(f"{cert_path} is not {name}'s certificate")
    key = cert.public_key()
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise ValueError(f"{cert_path} does not hold an Ed25519 key")
    return key


def cert_fingerprint(cert_path: Path) -> str:
    """SHA-256 (hex) of a PEM certificate's DER encoding."""
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    return hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def check_transcript(
    run_dir: Path,
    party: str,
    session: bytes,
    key: ed25519.Ed25519PublicKey,
    tick: Callable[[], None] | None = None,
    allow_unsigned_tail: bool = False,
) -> tuple[Transcript, str | None]:
    """Verify one party's chain, hashes, signatures and blobs; returns (transcript, failure)."""
    path = run_dir / "transcripts" / f"{party}.jsonl"
    blobs = run_dir / "transcripts" / f"{party}.blobs"
    t = Transcript(party, [])
    if not path.exists():
        return t, f"{party}: transcript {path.name} missing"
    prev = hashlib.sha256(GENESIS_DOMAIN + session + party.encode()).hexdigest()
    covered = -1
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{party} entry {lineno - 1} (line {lineno})"
            try:
                e = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                return t, f"{where}: not valid JSON"
            if not isinstance(e, dict) or not ENTRY_KEYS <= e.keys():
                return t, f"{where}: missing fields {sorted(ENTRY_KEYS - set(e))}"
            if e["i"] != lineno - 1 or e["party"] != party:
                return t, f"{where}: index/party field is {e['i']!r}/{e['party']!r}"
            if e["prev"] != prev:
                return t, f"{where}: prev does not match the previous entry's hash"
            body = {k: v for k, v in e.items() if k not in ("hash", "sig")}
            if hashlib.sha256(_canonical(body)).hexdigest() != e["hash"]:
                return t, f"{where}: hash does not match the entry's content"
            if lineno == 1 and (e["dir"] != "open" or e.get("session") != session.hex()):
                return t, f"{where}: first entry must open session {session.hex()}"
            if lineno == 1:
                t.cluster = str(e.get("cluster", ""))
            if e["dir"] == "checkpoint":
                try:
                    key.verify(
                        bytes.fromhex(e.get("sig", "")),
                        CHECKPOINT_DOMAIN + bytes.fromhex(e["hash"]),
                    )
                except (InvalidSignature, ValueError):
                    return t, f"{where}: invalid signature"
                covered = e["i"]
            elif "sig" in e:
                return t, f"{where}: signature on a non-checkpoint entry"
            if e.get("pub") and e["dir"] in ("send", "recv", "publish"):
                bp = blobs / str(e.get("dg", ""))
                if not bp.exists():
                    return t, f"{where}: public payload blob {e.get('dg')} missing"
                data = bp.read_bytes()
                if hashlib.sha256(data).hexdigest() != e["dg"] or len(data) != e.get("len"):
                    return t, f"{where}: public payload blob does not match its digest"
            if e["dir"] == "close":
                t.status = e.get("status", "?")
            prev = e["hash"]
            t.entries.append(e)
            if tick is not None:
                tick()
    if not t.entries:
        return t, f"{party}: empty transcript"
    if covered != t.entries[-1]["i"] and allow_unsigned_tail and covered >= 0:
        t.unsigned_tail = len(t.entries) - covered - 1
        t.entries = t.entries[: covered + 1]
        return t, None
    if covered != t.entries[-1]["i"]:
        return t, (
            f"{party} entry {covered + 1}: entries {covered + 1}..{t.entries[-1]['i']} "
            "are not covered by a signed checkpoint (truncated transcript?)"
        )
    return t, None


def check_consistency(
    transcripts: dict[str, Transcript], report: Report, clean: frozenset[str] = frozenset()
) -> Check:
    """What A logged as sent to B equals what B logged as received from A.

    ``clean`` holds the parties whose transcript ends with a signed clean close (the only
    evidence of failure the verifier accepts: nothing unsigned, such as ``result.json``, can
    declare a party failed). A message B logged as received from A that A's transcript lacks
    is an error if A closed cleanly (B fabricated it), and otherwise *unconfirmed*: recorded in
    ``report.unconfirmed`` so that no check relies on it, with a warning.
    """
    # A restarted party (docs/transcript.md, "Rejoining") opens its transcript with its
    # incarnation "inc"; its peers log a "rejoin" entry with it. A message is keyed by both
    # ends' incarnations, so each connection between two incarnations is matched on its own.
    own_inc = {
        p: int(t.entries[0].get("inc", 0)) if t.entries else 0 for p, t in transcripts.items()
    }
    sends: dict[tuple[str, str, int, int, int], dict[str, Any]] = {}
    recvs: dict[tuple[str, str, int, int, int], dict[str, Any]] = {}
    for party, t in transcripts.items():
        me = own_inc[party]
        peer_inc: dict[str, int] = {}
        for e in t.entries:
            if e["dir"] == "rejoin":
                peer_inc[str(e.get("peer"))] = int(e.get("inc", 0))
            elif e["dir"] == "send":
                sends[(party, e["peer"], me, peer_inc.get(e["peer"], 0), e["msg"])] = e
            elif e["dir"] == "recv":
                recvs[(e["peer"], party, peer_inc.get(e["peer"], 0), me, e["msg"])] = e
    fields = ("ty", "ph", "rd", "len", "dg", "pub")
    # receives a party signed it gave up ("missed": timed out, or the sender was gone)
    missed = {
        (e["peer"], p, e["ty"]): e for p, t in transcripts.items() for e in t.entries
        if e["dir"] == "missed"
    }  # fmt: skip
    for key, r in sorted(recvs.items(), key=lambda kv: (kv[0][1], kv[1]["i"])):
        sender, receiver, s_inc, _, msg = key
        s = sends.get(key)
        if s is None and sender in transcripts and s_inc < own_inc.get(sender, 0):
            report.unconfirmed.add((receiver, r["i"]))
            report.warnings.append(
                f"{receiver} entry {r['i']}: message {msg} ({r['ty']!r}) from {sender}'s "
                f"incarnation {s_inc}, which crashed (its transcript is not verified): "
                "unconfirmed, not relied on"
            )
            continue
        if s is None and sender not in clean:
            report.unconfirmed.add((receiver, r["i"]))
            why = (
                "has no transcript"
                if sender not in transcripts
                else "did not close its transcript cleanly"
            )
            report.warnings.append(
                f"{receiver} entry {r['i']}: message {msg} ({r['ty']!r}) from {sender} is not "
                f"in {sender}'s signed transcript ({sender} {why}): unconfirmed, not relied on"
            )
            continue
        if s is None:
            return Check(
                "cross-party consistency",
                False,
                len(recvs),
                f"{receiver} entry {r['i']}: received message {msg} from {sender} "
                f"that {sender} never logged as sent (its transcript is complete and closed)",
            )
        diff = [f for f in fields if s.get(f) != r.get(f)]
        if diff:
            return Check(
                "cross-party consistency",
                False,
                len(recvs),
                f"{receiver} entry {r['i']} vs {sender} entry {s['i']}: {', '.join(diff)} differ",
            )
    for key, s in sends.items():
        if key not in recvs and key[1] in transcripts and s["ty"] not in CONTROL_TYPES:
            msg = (
                f"{key[0]} entry {s['i']}: message {s['ty']!r} to {key[1]} was never "
                "logged as received"
            )
            if key[3] < own_inc.get(key[1], 0):  # to an incarnation that crashed
                report.warnings.append(
                    msg + f" (by {key[1]}'s incarnation {key[3]}, which crashed)"
                )
                continue
            gave_up = missed.get((key[0], key[1], s["ty"]))
            if gave_up is not None:  # signed by the receiver: late, left out
                report.late.append(
                    f"{key[0]} was late: its {s['ty']!r} (entry {s['i']}) never reached "
                    f"{key[1]} before {key[1]} stopped waiting for it ({key[1]} entry "
                    f"{gave_up['i']}, phase {gave_up.get('ph')}: {gave_up.get('reason', '')})"
                )
                continue
            if key[1] in clean:
                return Check("cross-party consistency", False, len(sends), msg)
            report.warnings.append(msg + f" ({key[1]} did not finish)")
    return Check(
        "cross-party consistency",
        True,
        len(recvs),
        f"{len(recvs)} messages matched between sender and receiver",
    )
