"""Corruption recipes of the specification's known-answer vectors (docs/spec/, spec version 1).

``corrupt(NAME, OUT)`` writes an invalid run directory: one targeted corruption of ``run/`` or
``mpc-run/``, listed in ``CORRUPTIONS`` / ``MPC_CORRUPTIONS`` with the numbered check it must
fail; ``variant(NAME, OUT)`` writes an honest variant of ``run/`` (``VARIANTS``), which must
verify. Invalid directories are deterministic recipes, not copies, to keep the vectors small.
A corrupting party re-signs with its own test key (``_resign``), so each recipe breaks exactly
the check it names. To add a vector: write its recipe here and name it in one of the tables;
the generator (``spec_vectors_generate``) lists the tables in ``expected.json`` and the CLI
(``make_spec_vectors.py``) serves them. Nothing here imports the generator or the CLI.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cbor2
from spec_vectors_paths import KEYS, MPC_KEYS, MPC_RUN, RUN, canonical

# ------------------------------------------------------------------ helpers (re-signing)


def _entries(run: Path, party: str) -> list[dict[str, Any]]:
    path = run / "transcripts" / f"{party}.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def _resign(
    run: Path, party: str, entries: list[dict[str, Any]], filename: str | None = None
) -> None:
    """Re-chain and re-sign ``party``'s transcript (``filename``, default ``PARTY.jsonl``) with
    its own key (a forging party); entries are renumbered in order."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    pem = (_keys(run) / party / f"{party}.key").read_bytes()
    key = load_pem_private_key(pem, None)
    prev = entries[0]["prev"]
    for i, e in enumerate(entries):
        e["i"] = i
        e["prev"] = prev
        e.pop("sig", None)
        e.pop("hash", None)
        e["hash"] = hashlib.sha256(canonical(e)).hexdigest()
        if e["dir"] == "checkpoint":
            e["sig"] = key.sign(b"sdp-checkpoint-v1" + bytes.fromhex(e["hash"])).hex()  # type: ignore[union-attr]
        prev = e["hash"]
    (run / "transcripts" / (filename or f"{party}.jsonl")).write_text(
        "".join(json.dumps(e, sort_keys=True, separators=(",", ":")) + "\n" for e in entries)
    )


def _keys(run: Path) -> Path:
    """The test keys of ``run``'s base vector (``keys-mpc/`` for the MPC run, else ``keys/``)."""
    import tomllib

    mpc = tomllib.loads((run / "cluster.toml").read_text())["run"].get("shuffler") == "mpc"
    return MPC_KEYS if mpc else KEYS


def _parties(run: Path) -> list[str]:
    return sorted(
        p.stem for p in (run / "transcripts").glob("*.jsonl") if ".crashed-" not in p.stem
    )


def _blob(run: Path, party: str, dg: str) -> bytes:
    return (run / "transcripts" / f"{party}.blobs" / dg).read_bytes()


def _substitute(run: Path, old: str, new: bytes) -> None:
    """Replace the public payload with digest ``old`` by ``new`` in every transcript that
    logged it (send, recv or publish), and re-sign those transcripts."""
    dg = hashlib.sha256(new).hexdigest()
    for party in _parties(run):
        entries = _entries(run, party)
        hit = False
        for e in entries:
            if e.get("dg") == old and e.get("pub"):
                e["dg"], e["len"] = dg, len(new)
                hit = True
        if hit:
            (run / "transcripts" / f"{party}.blobs" / dg).write_bytes(new)
            _resign(run, party, entries)


def _find(run: Path, party: str, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return next(e for e in _entries(run, party) if pred(e))


def _record(run: Path, rnd: int = 0) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(publisher, publish entry, decoded record) of round ``rnd``."""
    for party in _parties(run):
        for e in _entries(run, party):
            if e["dir"] == "publish" and e["ty"] == "mixnet.record":
                rec = cbor2.loads(_blob(run, party, e["dg"]))
                if rec.get("round", 0) == rnd:
                    return party, e, rec
    raise LookupError(f"no record of round {rnd}")


def _rewrite_message(
    run: Path, party: str, ty: str, change: Callable[[Any], Any]
) -> tuple[Any, Any]:
    """Change the first public ``ty`` message ``party`` sent (everywhere it was logged) and
    return (old, new) decoded payloads."""
    e = _find(run, party, lambda e: e["dir"] == "send" and e["ty"] == ty and e["pub"])
    old = cbor2.loads(_blob(run, party, e["dg"]))
    new = change(cbor2.loads(_blob(run, party, e["dg"])))
    _substitute(run, e["dg"], cbor2.dumps(new, canonical=True))
    return old, new


def _rewrite_record(run: Path, change: Callable[[dict[str, Any]], None], rnd: int = 0) -> None:
    _, e, rec = _record(run, rnd)
    change(rec)
    _substitute(run, e["dg"], cbor2.dumps(rec, canonical=True))


def _flip(b: bytes, i: int = 0) -> bytes:
    return b[:i] + bytes([b[i] ^ 1]) + b[i + 1 :]


# ------------------------------------------------------------------ corruptions


def c_cluster_edited(run: Path) -> None:
    text = (run / "cluster.toml").read_text()
    (run / "cluster.toml").write_text(text.replace("users = 100", "users = 101"))


def c_cert_swapped(run: Path) -> None:
    shutil.copy(run / "certs" / "client-1.crt", run / "certs" / "client-2.crt")


def c_entry_edited(run: Path) -> None:
    path = run / "transcripts" / "client-1.jsonl"
    lines = path.read_text().splitlines()
    e = json.loads(lines[2])
    e["t"] += 1
    lines[2] = json.dumps(e, sort_keys=True, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")


def c_bad_signature(run: Path) -> None:
    path = run / "transcripts" / "mix-3.jsonl"
    lines = path.read_text().splitlines()
    k = next(i for i, x in enumerate(lines) if '"dir":"checkpoint"' in x)
    e = json.loads(lines[k])
    e["sig"] = _flip(bytes.fromhex(e["sig"]), 5).hex()
    lines[k] = json.dumps(e, sort_keys=True, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")


def c_blob_edited(run: Path) -> None:
    e = _find(run, "mix-2", lambda e: e["dir"] == "send" and e["ty"] == "mix.output")
    p = run / "transcripts" / "mix-2.blobs" / e["dg"]
    p.write_bytes(_flip(p.read_bytes(), 40))


def c_analyzer_truncated(run: Path) -> None:
    path = run / "transcripts" / "analyzer.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")  # drops the final checkpoint


def c_recv_phase_forged(run: Path) -> None:
    entries = _entries(run, "analyzer")
    e = next(e for e in entries if e["dir"] == "recv" and e["ty"] == "mix.result")
    e["ph"] = "forged"
    _resign(run, "analyzer", entries)


def c_no_result(run: Path) -> None:
    (run / "result.json").unlink()


def c_result_edited(run: Path) -> None:
    res = json.loads((run / "result.json").read_text())

    def bump(x: Any) -> Any:
        if isinstance(x, float) and x != 0:
            return x * 1.5
        if isinstance(x, list):
            return [bump(v) for v in x]
        if isinstance(x, dict):
            return {k: bump(v) for k, v in x.items()}
        return x

    res["estimate"] = bump(res["estimate"])
    (run / "result.json").write_text(json.dumps(res, indent=1))


def c_record_off_wire(run: Path) -> None:
    def change(rec: dict[str, Any]) -> None:
        rec["submissions"][0]["proof"]["t"][0] = _flip(rec["submissions"][0]["proof"]["t"][0])

    _rewrite_record(run, change)


def c_bad_mix_proof(run: Path) -> None:
    """mix-2 publishes a shuffle proof with a wrong response s1 (eq. 1 fails)."""

    def change(step: dict[str, Any]) -> dict[str, Any]:
        for b in step["batches"].values():
            b["proof"]["s1"] = _flip(b["proof"]["s1"])
        return step

    old, new = _rewrite_message(run, "mix-2", "mix.output", change)

    def rec_change(rec: dict[str, Any]) -> None:
        rec["mixes"] = [new if m == old else m for m in rec["mixes"]]

    _rewrite_record(run, rec_change)


def _sign_list(run: Path, party: str, session: str, msg: dict[str, Any]) -> None:
    """``party`` re-signs its submission list (spec I-1; it controls its own key)."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    from mpc.mixnet.schema import signed_statement
    from parties.verify.evidence import list_digest

    key = load_pem_private_key((_keys(run) / party / f"{party}.key").read_bytes(), None)
    dg = list_digest(msg["submissions"], msg["users"])
    msg["sig"] = key.sign(signed_statement("inputs", session, party, dg))  # type: ignore[union-attr]


def c_bad_client_proof(run: Path) -> None:
    """client-1's first submission carries a wrong proof (in a list client-1 signed) that the
    record still lists as accepted."""
    _, _, rec0 = _record(run)

    def change(msg: dict[str, Any]) -> dict[str, Any]:
        s = msg["submissions"][0]
        s["proof"]["s"][0] = _flip(s["proof"]["s"][0])
        _sign_list(run, "client-1", str(rec0["session_id"]), msg)
        return msg

    old, new = _rewrite_message(run, "client-1", "mix.submissions", change)

    def rec_change(rec: dict[str, Any]) -> None:
        n = len(old["submissions"])
        for part in rec["inputs"]:
            if part["party"] == "client-1":
                part["sig"] = new["sig"]
        for i in range(len(rec["submissions"]) - n + 1):
            if rec["submissions"][i : i + n] == old["submissions"]:
                rec["submissions"][i : i + n] = new["submissions"]
                return
        raise LookupError("client-1's submissions are not in the record")

    _rewrite_record(run, rec_change)


def c_list_unsigned(run: Path) -> None:
    """client-1's submission list carries a signature that is not client-1's (on the wire and
    in the record alike): the record includes a list its party did not sign."""

    def change(msg: dict[str, Any]) -> dict[str, Any]:
        msg["sig"] = _flip(msg["sig"], 7)
        return msg

    _, new = _rewrite_message(run, "client-1", "mix.submissions", change)

    def rec_change(rec: dict[str, Any]) -> None:
        for part in rec["inputs"]:
            if part["party"] == "client-1":
                part["sig"] = new["sig"]

    _rewrite_record(run, rec_change)


def c_bad_dkg_key(run: Path) -> None:
    """The published joint key is not the sum of the qualified dealers' constant terms."""
    publisher, _, rec = _record(run)
    pk = rec["dkg"]["pk"]
    other = rec["dkg"]["vks"][1]

    def change(msg: dict[str, Any]) -> dict[str, Any]:
        msg["dkg"]["pk"] = other
        return msg

    _rewrite_message(run, publisher, "mix.key", change)

    def rec_change(rec: dict[str, Any]) -> None:
        assert rec["dkg"]["pk"] == pk
        rec["dkg"]["pk"] = other

    _rewrite_record(run, rec_change)


def c_bad_decryption_proof(run: Path) -> None:
    """A member of the decryption set (not the publisher) sends a share proof that fails."""
    publisher, _, rec = _record(run)
    servers = sorted({p for p in _parties(run) if p.startswith("mix-")})
    member = next(j for j in rec["decryption_set"] if servers[j - 1] != publisher)

    def change(msg: dict[str, Any]) -> dict[str, Any]:
        for sh in msg["batches"].values():
            sh["proof"]["e"] = _flip(sh["proof"]["e"])
        return msg

    _, new = _rewrite_message(run, servers[member - 1], "mix.decshare", change)

    def rec_change(rec: dict[str, Any]) -> None:
        for batch, by in rec["decryption"].items():
            if batch in new["batches"]:
                by[member] = new["batches"][batch]

    _rewrite_record(run, rec_change)


def c_publisher_truncated(run: Path) -> None:
    """The combining server's transcript cut after its last checkpoint: it published but did
    not close cleanly (a mix server may fail, so V-4 passes; its publication may not)."""
    publisher, _, _ = _record(run)
    path = run / "transcripts" / f"{publisher}.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")


def c_two_records_round0(run: Path) -> None:
    """Round 1's record relabelled as round 0: two records for round 0, none for round 1."""

    def change(rec: dict[str, Any]) -> None:
        rec["round"] = 0

    _rewrite_record(run, change, rnd=1)


def c_bad_params(run: Path) -> None:
    def change(rec: dict[str, Any]) -> None:
        rec["params"]["k"] = 1

    _rewrite_record(run, change)


def c_bad_decryption_set(run: Path) -> None:
    """A decryption set of k (not t) servers."""

    def change(rec: dict[str, Any]) -> None:
        rec["decryption_set"] = [m["server"] for m in rec["mixes"]]

    _rewrite_record(run, change)


def c_recv_logged_twice(run: Path) -> None:
    """The analyzer logs (and re-signs) its first received mix.result twice (spec V-5)."""
    entries = _entries(run, "analyzer")
    k = next(i for i, e in enumerate(entries) if e["dir"] == "recv" and e["ty"] == "mix.result")
    entries.insert(k + 1, dict(entries[k]))
    _resign(run, "analyzer", entries)


def _restart(run: Path, party: str, late: str | None) -> None:
    """``party`` crashed before speaking (``PARTY.crashed-0.jsonl``) and runs as incarnation 1;
    the others log its ``rejoin`` at once, ``late`` only after its first receive from it."""
    entries = _entries(run, party)
    opened = {k: v for k, v in entries[0].items() if k not in ("hash", "sig", "inc")}
    crashed = [opened, {"i": 1, "t": opened["t"], "party": party, "dir": "checkpoint"}]
    _resign(run, party, crashed, f"{party}.crashed-0.jsonl")
    entries[0]["inc"] = 1
    _resign(run, party, entries)
    for other in _parties(run):
        if other == party:
            continue
        es = _entries(run, other)
        at = 1
        if other == late:
            at = 1 + next(
                i for i, e in enumerate(es) if e["dir"] == "recv" and e.get("peer") == party
            )
        es.insert(at, {"t": es[at - 1]["t"], "party": other, "dir": "rejoin", "peer": party})
        es[at]["inc"] = 1
        _resign(run, other, es)


def restarted(run: Path) -> None:
    """An honest restart: mix-1 crashed before speaking and rejoined as incarnation 1; every
    peer logged its rejoin before talking to it (must verify)."""
    _restart(run, "mix-1", None)


def c_recv_from_restarted(run: Path) -> None:
    """As ``restarted``, but the analyzer logs its first mix.result from mix-1 before the
    rejoin: a receive from incarnation 0, which was restarted (spec V-5 rule 0)."""
    _restart(run, "mix-1", "analyzer")


def c_crashed_closed(run: Path) -> None:
    """mix-1's crashed incarnation 0 ends with a signed clean close (spec T-11: a closed
    transcript is not a crash)."""
    _restart(run, "mix-1", None)
    path = run / "transcripts" / "mix-1.crashed-0.jsonl"
    es = [json.loads(x) for x in path.read_text().splitlines()]
    es.insert(1, {"t": es[0]["t"], "party": "mix-1", "dir": "close", "status": "ok"})
    _resign(run, "mix-1", es, "mix-1.crashed-0.jsonl")


def c_ledger_total_forged(run: Path) -> None:
    """The analyzer signs (and result.json repeats) a total below its releases' (V-23 L-2)."""
    e = _find(run, "analyzer", lambda e: e["dir"] == "publish" and e["ty"] == "privacy")
    priv = cbor2.loads(_blob(run, "analyzer", e["dg"]))
    priv["total"]["eps"] = priv["total"]["eps"] / 2
    _substitute(run, e["dg"], cbor2.dumps(priv, canonical=True))
    res = json.loads((run / "result.json").read_text())
    res["privacy"]["total"]["eps"] = priv["total"]["eps"]
    (run / "result.json").write_text(json.dumps(res, indent=1))


def c_duplicate_key(run: Path) -> None:
    """An analyzer entry names ``ty`` twice: a forged value first, the signed one last (a
    last-wins JSON parser sees a valid, signed entry; a first-wins one sees the forgery)."""
    path = run / "transcripts" / "analyzer.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    k = next(i for i, x in enumerate(lines) if '"ty":"mix.result"' in x)
    lines[k] = '{"ty":"state",' + lines[k][1:]
    path.write_text("".join(lines))


def c_recv_ty_not_text(run: Path) -> None:
    """``recv-from-restarted`` with ``ty`` the integer 5 (``sdp verify`` crashed on it before)."""
    c_recv_from_restarted(run)
    es = _entries(run, "analyzer")
    k = next(i for i, e in enumerate(es) if e["dir"] == "recv" and e.get("peer") == "mix-1")
    es[k]["ty"] = 5
    _resign(run, "analyzer", es)


def c_msg_not_integer(run: Path) -> None:
    """The analyzer logs a receive numbered by a list (``sdp verify`` crashed on it before)."""
    es = _entries(run, "analyzer")
    k = next(i for i, e in enumerate(es) if e["dir"] == "recv" and e["ty"] == "mix.result")
    es[k]["msg"] = [es[k]["msg"]]
    _resign(run, "analyzer", es)


def _mpc_output(run: Path, server: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(send entry, decoded payload) of ``server``'s last ``mpc-output`` chunk."""
    es = [e for e in _entries(run, server) if e["dir"] == "send" and e["ty"] == "mpc-output"]
    return es[-1], cbor2.loads(_blob(run, server, es[-1]["dg"]))


def c_mpc_share_edited(run: Path) -> None:
    """mpc-2 alters one output share it sent (re-signed): shares off one polynomial."""
    e, chunk = _mpc_output(run, "mpc-2")
    name = sorted(chunk["batches"])[0]
    data = bytearray(chunk["batches"][name]["data"])
    v = int.from_bytes(data[:4], "little")
    data[:4] = ((v + 1) % (2**31 - 1)).to_bytes(4, "little")
    chunk["batches"][name]["data"] = bytes(data)
    _substitute(run, e["dg"], cbor2.dumps(chunk, canonical=True))


def c_mpc_mac_nonzero(run: Path) -> None:
    """Every server adds 1 to its share of a MAC check value: consistent, but it opens to 1."""
    for server in ("mpc-1", "mpc-2", "mpc-3"):
        e, chunk = _mpc_output(run, server)
        mac = chunk["checks"]["mac"]
        b = sorted(mac)[0]
        mac[b][0] = (mac[b][0] + 1) % (2**31 - 1)
        _substitute(run, e["dg"], cbor2.dumps(chunk, canonical=True))


MPC_CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "mpc-share-edited": (c_mpc_share_edited, "V-30", "an MPC server's output share altered"),
    "mpc-mac-nonzero": (c_mpc_mac_nonzero, "V-30", "a MAC check value opens to 1, not 0"),
}


VARIANTS: dict[str, Callable[[Path], None]] = {"restarted": restarted}


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "cluster-edited": (c_cluster_edited, "V-1", "cluster.toml changed after the run"),
    "cert-swapped": (c_cert_swapped, "V-2", "a certificate replaced by another party's"),
    "entry-edited": (c_entry_edited, "V-3", "a transcript entry edited without re-hashing"),
    "bad-signature": (c_bad_signature, "V-3", "a checkpoint signature altered"),
    "blob-edited": (c_blob_edited, "V-3", "a public payload blob altered"),
    "analyzer-truncated": (
        c_analyzer_truncated,
        "V-4",
        "analyzer transcript cut after its last checkpoint",
    ),
    "recv-phase-forged": (
        c_recv_phase_forged,
        "V-5",
        "analyzer re-signs a receive entry with another phase",
    ),
    "publisher-truncated": (
        c_publisher_truncated,
        "V-6",
        "the record's publisher did not close cleanly",
    ),
    "no-result": (c_no_result, "V-7", "result.json removed"),
    "two-records-round0": (
        c_two_records_round0,
        "V-10",
        "two records for round 0, none for round 1",
    ),
    "record-off-wire": (
        c_record_off_wire,
        "V-11",
        "record's submission differs from what the client sent",
    ),
    "list-unsigned": (
        c_list_unsigned,
        "V-19",
        "a client party's submission list is not signed by it",
    ),
    "bad-params": (c_bad_params, "V-12", "record parameters name a single mix server"),
    "bad-dkg-key": (c_bad_dkg_key, "V-13", "published joint key is not the qualified dealers' sum"),
    "bad-client-proof": (
        c_bad_client_proof,
        "V-14",
        "client proof of knowledge fails, record accepts it",
    ),
    "bad-mix-proof": (c_bad_mix_proof, "V-16", "mix-2's shuffle proof has a wrong response s1"),
    "bad-decryption-proof": (c_bad_decryption_proof, "V-18", "a decryption-share proof fails"),
    "bad-decryption-set": (c_bad_decryption_set, "V-17", "a decryption set of k servers, not t"),
    "result-edited": (c_result_edited, "V-22", "result.json estimate differs from the signed one"),
    "recv-logged-twice": (c_recv_logged_twice, "V-5", "a received message logged twice"),
    "duplicate-key": (c_duplicate_key, "V-3", "a transcript entry names a key twice"),
    "recv-ty-not-text": (c_recv_ty_not_text, "V-5", "a receive from a restarted sender, ty 5"),
    "msg-not-integer": (c_msg_not_integer, "V-5", "a receive whose message number is a list"),
    "recv-from-restarted": (
        c_recv_from_restarted,
        "V-5",
        "a receive from an incarnation that was later restarted",
    ),
    "crashed-closed": (c_crashed_closed, "V-3", "a crashed incarnation's transcript is closed"),
    "ledger-total-forged": (
        c_ledger_total_forged,
        "V-23",
        "the signed privacy total is not the composition of its releases",
    ),
}


def variant(name: str, out: Path) -> None:
    """Write the honest variant ``name`` of ``run/`` (``VARIANTS``) to ``out``."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(RUN, out)
    VARIANTS[name](out)


def corrupt(name: str, out: Path) -> str:
    """Write invalid run directory ``name`` to ``out``; returns the check it must fail."""
    fn, check, _ = {**CORRUPTIONS, **MPC_CORRUPTIONS}[name]
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(MPC_RUN if name in MPC_CORRUPTIONS else RUN, out)
    fn(out)
    return check
