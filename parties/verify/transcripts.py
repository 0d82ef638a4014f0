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

from mpc.mixnet.report import Check, Report

GENESIS_DOMAIN = b"sdp-transcript-v1"
CHECKPOINT_DOMAIN = b"sdp-checkpoint-v1"
ENTRY_KEYS = {"i", "t", "party", "dir", "prev", "hash"}
MESSAGE_DIRS = {"send", "recv"}
CONTROL_TYPES = {"_bye", "_abort", "_busy"}


@dataclass
class Transcript:
    """A parsed transcript and the messages it logged."""

    party: str
    entries: list[dict[str, Any]]
    status: str = "?"
    unsigned_tail: int = 0  # entries after the last checkpoint of a party that failed
    cluster: str = ""  # the cluster digest its open entry records
    incarnation: int = 0  # its open entry's "inc" (0 when absent)
    # the party's earlier incarnations, verified (NAME.crashed-K.jsonl, K = 0, 1, ...):
    # ``parties.verify.incarnations``; empty for a party that was never restarted
    crashed: list[Transcript] = field(default_factory=list)
    label: str = ""  # the file's stem, for messages (PARTY or PARTY.crashed-K)

    @property
    def closed_cleanly(self) -> bool:
        """Its last signed entries are ``close`` with status ``ok``."""
        return self.status == "ok" and not self.unsigned_tail


Transcripts = dict[str, Transcript]  # party name -> its verified transcript


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: an object naming a key twice is refused (json.loads would keep
    the last value silently, so two readers could see two different entries)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def parse_entry(raw: bytes) -> Any:
    """One transcript line as JSON; ValueError if it is not valid JSON or repeats a key."""
    return json.loads(raw, object_pairs_hook=_no_duplicate_keys)


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


def certificate_keys(run_dir: Path, names: list[str]) -> dict[str, bytes]:
    """Raw Ed25519 public keys from the run's certificates (pinned by the transcript checks)."""
    from cryptography.hazmat.primitives import serialization

    raw = serialization.Encoding.Raw, serialization.PublicFormat.Raw
    return {
        n: public_key(run_dir / "certs" / f"{n}.crt", n).public_bytes(*raw)
        for n in names
        if (run_dir / "certs" / f"{n}.crt").exists()
    }


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
    filename: str | None = None,
) -> tuple[Transcript, str | None]:
    """Verify one party's chain, hashes, signatures and blobs; returns (transcript, failure).

    ``filename`` (default ``PARTY.jsonl``) names another transcript file of the same party,
    such as a crashed incarnation's ``PARTY.crashed-K.jsonl``."""
    path = run_dir / "transcripts" / (filename or f"{party}.jsonl")
    blobs = run_dir / "transcripts" / f"{party}.blobs"
    label = path.name.removesuffix(".jsonl")
    t = Transcript(party, [], label=label)
    if not path.exists():
        return t, f"{party}: transcript {path.name} missing"
    prev = hashlib.sha256(GENESIS_DOMAIN + session + party.encode()).hexdigest()
    covered = -1
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{label} entry {lineno - 1} (line {lineno})"
            try:
                e = parse_entry(raw)
            except UnicodeDecodeError:
                return t, f"{where}: not valid JSON"
            except ValueError as exc:
                if str(exc).startswith("duplicate key"):
                    return t, f"{where}: {exc} (an entry names each field once)"
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
                inc = e.get("inc", 0)
                if type(inc) is not int or inc < 0:
                    return t, f"{where}: incarnation {inc!r} is not a non-negative integer"
                t.incarnation = inc
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
            if e["dir"] in ("send", "recv", "publish"):  # T-12: typed, never == (1 == True)
                if type(e.get("pub")) is not bool:
                    return t, f"{where}: pub {e.get('pub')!r} is not a boolean"
                for f in ("len", "rd"):
                    if type(e.get(f)) is not int or e[f] < 0:
                        return t, f"{where}: {f} {e.get(f)!r} is not a non-negative integer"
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
        return t, f"{label}: empty transcript"
    if covered != t.entries[-1]["i"] and allow_unsigned_tail and covered >= 0:
        t.unsigned_tail = len(t.entries) - covered - 1
        t.entries = t.entries[: covered + 1]
        return t, None
    if covered != t.entries[-1]["i"]:
        return t, (
            f"{label} entry {covered + 1}: entries {covered + 1}..{t.entries[-1]['i']} "
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

    Incarnations (docs/transcript.md, "Incarnations"): a party's incarnation K is its K-th
    verified transcript (``Transcript.crashed`` then the current one, checked by
    ``parties.verify.incarnations``), never a number someone claims. A message is keyed by both
    ends' incarnations: the writer's own, and the peer's as the writer's ``rejoin`` entries give
    it, which must name an incarnation the peer's own transcripts prove (later than the one
    before). A crashed incarnation that spoke (a protocol message sent, or received by anyone)
    could not have been restarted: an error.
    """
    fail = "cross-party consistency"
    chains = {p: [*t.crashed, t] for p, t in transcripts.items()}
    last = {p: len(c) - 1 for p, c in chains.items()}
    sends: dict[tuple[str, str, int, int, int], dict[str, Any]] = {}
    recvs: dict[tuple[str, str, int, int, int], dict[str, Any]] = {}
    for party, chain in chains.items():
        for me, t in enumerate(chain):
            peer_inc: dict[str, int] = {}
            for e in t.entries:
                d = e["dir"]
                if d == "rejoin":
                    peer, inc = e.get("peer"), e.get("inc")
                    bad = _bad_rejoin(peer, inc, peer_inc, last)
                    if bad:
                        return Check("V-5", fail, False, 0, f"{t.label} entry {e['i']}: {bad}")
                    peer_inc[str(peer)] = int(inc)  # type: ignore[arg-type]
                elif d in MESSAGE_DIRS:
                    peer = e["peer"]
                    key = (
                        (party, peer, me, peer_inc.get(peer, 0), e["msg"])
                        if d == "send"
                        else (peer, party, peer_inc.get(peer, 0), me, e["msg"])
                    )
                    seen = sends if d == "send" else recvs
                    if key in seen:
                        return Check(
                            "V-5",
                            fail,
                            False,
                            0,
                            f"{t.label} entry {e['i']}: message {e['msg']} on the channel with "
                            f"{peer} logged twice (entry {seen[key]['i']})",
                        )
                    seen[key] = e
    fields = ("ty", "ph", "rd", "len", "dg", "pub")
    # receives a party signed it gave up ("missed": timed out, or the sender was gone)
    missed = {
        (e["peer"], p, e["ty"]): e
        for p, chain in chains.items()
        for t in chain
        for e in t.entries
        if e["dir"] == "missed"
    }
    for key, r in sorted(recvs.items(), key=lambda kv: (kv[0][1], kv[0][3], kv[1]["i"])):
        sender, receiver, s_inc, r_inc, msg = key
        where = f"{chains[receiver][r_inc].label} entry {r['i']}"
        s = sends.get(key)
        if sender in transcripts and s_inc < last[sender] and not str(r["ty"]).startswith("_"):
            return Check(
                "V-5",
                fail,
                False,
                len(recvs),
                f"{where}: received {r['ty']!r} from {sender}'s incarnation {s_inc}, which "
                f"was restarted: a party that sent a protocol message cannot rejoin",
            )
        if s is None and r_inc == last[receiver]:
            report.unconfirmed.add((receiver, r["i"]))  # checks read current transcripts only
        if s is None and sender in transcripts and s_inc < last[sender]:
            report.warnings.append(
                f"{where}: message {msg} ({r['ty']!r}) from {sender}'s incarnation {s_inc}, "
                "which crashed: not in its signed transcript, unconfirmed, not relied on"
            )
            continue
        if s is None and sender not in clean:
            why = (
                "has no transcript"
                if sender not in transcripts
                else "did not close its transcript cleanly"
            )
            report.warnings.append(
                f"{where}: message {msg} ({r['ty']!r}) from {sender} is not "
                f"in {sender}'s signed transcript ({sender} {why}): unconfirmed, not relied on"
            )
            continue
        if s is None:
            return Check(
                "V-5",
                fail,
                False,
                len(recvs),
                f"{where}: received message {msg} from {sender} "
                f"that {sender} never logged as sent (its transcript is complete and closed)",
            )
        diff = [f for f in fields if s.get(f) != r.get(f)]
        if diff:
            return Check(
                "V-5",
                fail,
                False,
                len(recvs),
                f"{where} vs {chains[sender][s_inc].label} entry {s['i']}: "
                f"{', '.join(diff)} differ",
            )
    for key, s in sends.items():
        sender, receiver, s_inc, r_inc, _ = key
        if key in recvs or receiver not in transcripts or s["ty"] in CONTROL_TYPES:
            continue
        msg = (
            f"{chains[sender][s_inc].label} entry {s['i']}: message {s['ty']!r} to {receiver} "
            "was never logged as received"
        )
        if r_inc < last[receiver]:  # to an incarnation that crashed (its receipts are cut)
            report.warnings.append(msg + f" (by {receiver}'s incarnation {r_inc}, which crashed)")
            continue
        gave_up = missed.get((sender, receiver, s["ty"]))
        if gave_up is not None:  # signed by the receiver: late, left out
            report.late.append(
                f"{sender} was late: its {s['ty']!r} (entry {s['i']}) never reached "
                f"{receiver} before {receiver} stopped waiting for it ({receiver} entry "
                f"{gave_up['i']}, phase {gave_up.get('ph')}: {gave_up.get('reason', '')})"
            )
            continue
        if receiver in clean:
            return Check("V-5", fail, False, len(sends), msg)
        report.warnings.append(msg + f" ({receiver} did not finish)")
    return Check(
        "V-5",
        fail,
        True,
        len(recvs),
        f"{len(recvs)} messages matched between sender and receiver",
    )


def _bad_rejoin(peer: Any, inc: Any, seen: dict[str, int], last: dict[str, int]) -> str:
    """Why a ``rejoin`` entry is not evidence of a restart ("" if it is): the peer must have
    transcripts, and ``inc`` must be an incarnation they prove, later than the one before."""
    if not isinstance(peer, str) or peer not in last:
        return f"rejoin of {peer!r}, which left no transcript"
    if type(inc) is not int or not seen.get(peer, 0) < inc <= last[peer]:
        return (
            f"rejoin of {peer} as incarnation {inc!r}: {peer}'s own transcripts prove "
            f"incarnations 0..{last[peer]}, and the incarnation must be later than "
            f"{seen.get(peer, 0)} (the one before)"
        )
    return ""


def broadcast_digests(
    transcripts: dict[str, Transcript], sender: str, ty: str
) -> dict[int, dict[str, str]]:
    """Per round, the digests of the ``ty`` messages of ``sender``: what every receiver signed
    it received from it (any incarnation of either), and what the sender logged as sent; each
    digest maps to a party whose blobs hold the payload (a receiver's when one has it)."""
    out: dict[int, dict[str, str]] = {}
    for party, t in transcripts.items():
        for inc in [*t.crashed, t]:
            for e in inc.entries:
                if e.get("ty") != ty:
                    continue
                if e["dir"] == "recv" and e["peer"] == sender:
                    holders = out.setdefault(e["rd"], {})
                    if e.get("pub") or e["dg"] not in holders:
                        holders[e["dg"]] = party
                elif e["dir"] == "send" and party == sender:
                    out.setdefault(e["rd"], {}).setdefault(e["dg"], party)
    return out
