"""``sdp verify`` checks of mix-net runs.

1. Exactly one public record was published per round (by the server that combined the shares;
   multi-round protocols run one mix-net per round and mark the record with ``round``).
2. The record is the one on the wire: its DKG record, the client submissions, every mix step,
   every other server's decryption shares and the plaintexts the analyzer received are
   byte-for-byte the public messages logged in the transcripts (whose chains, signatures and
   cross-party consistency were checked before).
3. ``mpc.mixnet.record_verifier.verify_record`` re-checks every proof (DKG, client proofs of
   knowledge, proofs of shuffle, decryption-share proofs) and the decryption. It shares only
   group arithmetic and the schema with the prover.
4. The analyzer's round states and published estimate are recomputed from the decrypted
   multisets, round by round.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from parties.runtime import codec
from parties.verify.evidence import (
    entry_signed,
    list_digest,
    proves_equivocation,
    proves_lie,
    proves_step_equivocation,
)
from parties.verify.shuffle import _blob, recompute_estimate
from parties.verify.transcripts import Check, Report, Transcript, Transcripts, certificate_keys

if TYPE_CHECKING:
    from parties.runtime.pools import OpenPool

RECORD_TYPE = "mixnet.record"


def _sent(t: Transcript, ty: str) -> list[dict[str, Any]]:
    return [e for e in t.entries if e["dir"] == "send" and e["ty"] == ty and e["pub"]]


def _digest(obj: Any) -> str:
    return hashlib.sha256(codec.dumps(obj)).hexdigest()


def _tie_to_wire(
    run_dir: Path,
    rec: dict[str, Any],
    publisher: str,
    servers: list[str],
    clients: list[str],
    analyzer: str,
    transcripts: dict[str, Transcript],
    rnd: int = 0,
) -> str | None:
    """None if every artifact of round ``rnd``'s record is a logged public message, else what
    is not (the analyzer's ``rnd``-th plaintext result must equal the record's plaintexts)."""
    start = 0
    for part in rec.get("inputs", []):
        party, count = part.get("party"), int(part.get("count", -1))
        if party not in clients or party not in transcripts:
            return f"the record names client party {party!r}, not one whose transcript is here"
        piece = {
            "users": part.get("users"),
            "submissions": rec["submissions"][start : start + count],
            "sig": part.get("sig"),
        }
        start += count
        if _digest(piece) not in {e["dg"] for e in _sent(transcripts[party], "mix.submissions")}:
            return f"the record's submissions from {party} are not what {party} sent"
    if start != len(rec["submissions"]):
        return "the record's submissions are not the client parties' lists"
    if _digest({"dkg": rec["dkg"]}) not in {
        e["dg"] for e in _sent(transcripts[publisher], "mix.key")
    }:
        return f"the record's DKG is not the key {publisher} announced"
    for n, step in enumerate(rec["mixes"]):
        label = step["server"]
        if not isinstance(label, int) or not 1 <= label <= len(servers):
            return f"mix step {n} is labelled {label!r}, not a server 1..{len(servers)}"
        mixer = servers[label - 1]
        logged = {e["dg"] for e in _sent(transcripts[mixer], "mix.output")}
        if _digest(step) not in logged:
            return f"mix step {n} (server {label}) is not what {mixer} sent"
    me = servers.index(publisher) + 1
    for batch, by_server in rec["decryption"].items():
        for j, shares in by_server.items():
            if int(j) == me:
                continue  # the publisher's own shares never travel
            msgs = [
                codec.loads(_blob(run_dir, servers[int(j) - 1], e["dg"]))
                for e in _sent(transcripts[servers[int(j) - 1]], "mix.decshare")
            ]
            if not any(m.get("batches", {}).get(batch) == shares for m in msgs):
                return f"decryption shares of server {j} for batch {batch!r} were never sent"
    results = [
        codec.loads(_blob(run_dir, analyzer, e["dg"]))
        for e in transcripts[analyzer].entries
        if e["dir"] == "recv" and e["ty"] == "mix.result"
    ]
    results = [
        r for r in results if isinstance(r, dict) and "delegated" not in r and "abort" not in r
    ]
    # one result per round (several servers may send the same one)
    results = [r for i, r in enumerate(results) if i == 0 or r != results[i - 1]]
    if len(results) <= rnd:
        return f"the analyzer logged {len(results)} plaintext results, none for round {rnd}"
    if results[rnd].get("users") != rec.get("users"):
        return "the analyzer's user count differs from the record's"
    for batch, obj in results[rnd].get("batches", {}).items():
        rows = codec.obj_to_array(obj["rows"])
        valid = codec.obj_to_array(obj["valid"]).astype(bool)
        plain = rec["plaintexts"].get(batch)
        if plain is None or len(plain) != rows.shape[0]:
            return f"batch {batch!r}: the analyzer's plaintexts differ from the record's"
        mine = [None if not v else [int(x) for x in r] for r, v in zip(rows.tolist(), valid)]
        if mine != [None if p is None else [int(x) for x in p] for p in plain]:
            return f"batch {batch!r}: the analyzer's plaintexts differ from the record's"
    return None


def _keys(run_dir: Path, names: list[str]) -> dict[str, bytes]:
    """Raw Ed25519 public keys from the run's certificates (pinned by the transcript checks)."""
    return certificate_keys(run_dir, names)


def input_agreement(
    rec: dict[str, Any], servers: list[str], keys: dict[str, bytes]
) -> tuple[bool, str]:
    """Every included list is signed by its client party, and every piece of evidence of the
    input agreement proves what it claims; the detail names each party the evidence convicts
    (a server that lied, a client party that equivocated)."""
    sid = str(rec["session_id"])
    start = 0
    for part in rec.get("inputs", []):
        count = int(part["count"])
        subs = rec["submissions"][start : start + count]
        start += count
        entry = {"digest": list_digest(subs, part.get("users")), "sig": part.get("sig")}
        if not entry_signed(keys, sid, part["party"], entry):
            return False, f"the list of {part['party']} in the record is not signed by it"
    named = []
    for ev in rec.get("evidence", []):
        if "server" in ev:
            j = ev["server"]
            name = servers[j - 1] if isinstance(j, int) and 1 <= j <= len(servers) else None
            report = ev.get("report")
            told = report.get("report", {}) if isinstance(report, dict) else {}
            victim = name and proves_lie(keys, sid, sorted(told), name, report)
            if not victim:
                return False, f"the evidence against server {j!r} does not prove a lie"
            named.append(
                f"server {j} ({name}) lied in the input agreement: its signed report gives "
                f"{victim} a list {victim} never signed"
            )
        elif not proves_equivocation(keys, sid, ev.get("party"), ev.get("equivocation")):
            return False, f"the evidence against client party {ev.get('party')!r} proves nothing"
        else:
            named.append(f"client party {ev['party']} equivocated: it signed two different lists")
    if named:
        return True, "; ".join(named)
    return True, "every included list is signed by its client party; no party was convicted"


def check_mixnet_run(
    run_dir: Path,
    cluster: dict[str, Any],
    transcripts: Transcripts,
    report: Report,
    pool: OpenPool | None = None,
) -> None:
    """All mix-net checks of a run directory (appended to ``report``); the proof checks run on
    ``pool`` (``sdp verify --pool``), else on a local pool of every core."""
    parties = cluster["party"]
    servers = [p["name"] for p in parties if p["role"] == "mix-server"]
    clients = [p["name"] for p in parties if p["role"] == "client"]
    analyzer = next(p["name"] for p in parties if p["role"] == "analyzer")
    pubs = [
        (s, e)
        for s in servers
        if s in transcripts
        for e in transcripts[s].entries
        if e["dir"] == "publish" and e["ty"] == RECORD_TYPE
    ]
    if not pubs:
        report.add(Check("V-10", "mix-net public record", False, 0, "no server published a record"))
        return
    rounds = _round_records(run_dir, pubs, report)
    if rounds is None:
        return
    inputs = []
    for rnd, (publisher, rec) in enumerate(rounds):
        batches = _check_round(
            run_dir,
            rec,
            publisher,
            servers,
            clients,
            analyzer,
            transcripts,
            report,
            rnd,
            len(rounds),
            pool,
        )
        if batches is None:
            return
        inputs.append(batches)
    _aborts_with_evidence(run_dir, servers, analyzer, transcripts, rounds, report)
    recompute_estimate(
        run_dir,
        cluster,
        transcripts[analyzer],
        "mix.result",
        report,
        inputs=inputs,
        users=[int(rec.get("users", -1)) for _, rec in rounds],
        transcripts=transcripts,
    )


def _aborts_with_evidence(
    run_dir: Path,
    servers: list[str],
    analyzer: str,
    transcripts: dict[str, Transcript],
    rounds: list[tuple[str, dict[str, Any]]],
    report: Report,
) -> None:
    """A server that aborted with signed evidence (``mix.result`` to the analyzer): the check
    names whom the evidence convicts (e.g. a mixer that signed two different steps), or fails
    if it proves nothing."""
    sessions = [str(rec.get("session_id")) for _, rec in rounds]
    keys = _keys(run_dir, servers)
    for s in servers:
        for e in transcripts[analyzer].entries:
            if not (e["dir"] == "recv" and e["ty"] == "mix.result" and e.get("peer") == s):
                continue
            msg = codec.loads(_blob(run_dir, analyzer, e["dg"]))
            if not (isinstance(msg, dict) and "abort" in msg and "evidence" in msg):
                continue
            ev = msg["evidence"]
            who = next(
                (j for sid in sessions if (j := proves_step_equivocation(keys, servers, sid, ev))),
                None,
            )
            report.add(
                Check(
                    "V-19",
                    "mix-net abort evidence",
                    who is not None,
                    1,
                    f"{s} aborted: server {who} ({servers[who - 1]}) equivocated, two different "
                    "mix steps signed by it"
                    if who
                    else f"{s} aborted with evidence that proves nothing: {msg['abort']}",
                )
            )


def _round_records(
    run_dir: Path, pubs: list[tuple[str, dict[str, Any]]], report: Report
) -> list[tuple[str, dict[str, Any]]] | None:
    """The published records ordered by round (exactly one per round 0..R-1), or None."""
    by_round: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for publisher, entry in pubs:
        try:
            rec = codec.loads(_blob(run_dir, publisher, entry["dg"]))
            rnd = int(rec.get("round", 0)) if isinstance(rec, dict) else -1
        except (ValueError, TypeError, KeyError) as exc:
            report.add(
                Check("V-10", "mix-net public record", False, 0, f"unreadable record: {exc}")
            )
            return None
        by_round.setdefault(rnd, []).append((publisher, rec))
    want = list(range(len(by_round)))
    if sorted(by_round) != want or any(len(v) != 1 for v in by_round.values()):
        report.add(
            Check(
                "V-10",
                "mix-net public record",
                False,
                len(pubs),
                f"records per round {{{', '.join(f'{r}: {len(v)}' for r, v in sorted(by_round.items()))}}}"
                " (expected exactly one per round, rounds 0..R-1)",
            )
        )
        return None
    return [by_round[r][0] for r in want]


def _check_round(
    run_dir: Path,
    rec: Any,
    publisher: str,
    servers: list[str],
    clients: list[str],
    analyzer: str,
    transcripts: dict[str, Transcript],
    report: Report,
    rnd: int,
    n_rounds: int,
    pool: OpenPool | None,
) -> dict[str, np.ndarray] | None:
    """Wire tie and proof checks of one round's record; its plaintext batches, or None."""
    from mpc.mixnet.record_verifier import verify_record

    label = "mix-net" if n_rounds == 1 else f"mix-net round {rnd}"
    try:
        problem = _tie_to_wire(
            run_dir, rec, publisher, servers, clients, analyzer, transcripts, rnd
        )
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        problem = f"malformed record or message: {type(exc).__name__}: {exc}"
    report.add(
        Check(
            "V-11",
            f"{label} record matches the wire",
            problem is None,
            len(rec.get("submissions", [])) if isinstance(rec, dict) else 0,
            problem
            or f"record published by {publisher}: DKG, submissions, {len(rec['mixes'])} mix steps, "
            "decryption shares and plaintexts are the logged messages",
        )
    )
    if problem:
        return None
    ok, detail = input_agreement(rec, servers, _keys(run_dir, servers + clients))
    report.add(Check("V-19", f"{label} input agreement", ok, len(rec.get("inputs", [])), detail))
    if not ok:
        return None
    bar, progress = None, None
    if sys.stderr.isatty():
        from rich.progress import Progress

        bar = Progress(transient=True)
        bar.start()
        task = bar.add_task("verifying proofs", total=1.0)

        def progress(check: str, fraction: float) -> None:
            bar.update(task, completed=fraction, description=f"verifying: {check}")

    try:
        vr = verify_record(
            rec,
            workers=pool.workers if pool else os.cpu_count() or 1,
            progress=progress,
            pool=pool.executor if pool else None,
        )
    finally:
        if bar is not None:
            bar.stop()
    for c in vr.checks:
        detail = c.detail or f"{c.seconds:.2f} s"
        report.add(Check(c.vid, f"{label}: {c.name}", c.ok, c.count, detail, c.seconds))
    if not vr.ok:
        return None
    batches = {}
    for name, rows in rec["plaintexts"].items():
        width = next(b["width"] for b in rec["params"]["batches"] if b["name"] == name)
        good = [r for r in rows if r is not None]
        batches[name] = np.asarray(good, dtype=np.int64).reshape(len(good), width)
    return batches
