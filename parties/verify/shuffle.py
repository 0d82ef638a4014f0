"""Protocol checks for shuffle runs: recompute the published estimate from the shuffled
multiset with the protocol's analyzer; state what the backend cannot prove."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from parties.runtime import codec
from parties.verify.transcripts import Check, Report, Transcript, Transcripts, broadcast_digests


def _blob(run_dir: Path, party: str, digest: str) -> bytes:
    return (run_dir / "transcripts" / f"{party}.blobs" / digest).read_bytes()


def _close(a: Any, b: Any, rel: float = 1e-9) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rel) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        try:
            if math.isnan(float(a)) or math.isnan(float(b)):  # spec E-7: NaN equals only NaN
                return math.isnan(float(a)) and math.isnan(float(b))
            return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return a == b


def recompute_estimate(
    run_dir: Path,
    cluster: dict[str, Any],
    analyzer: Transcript,
    input_type: str,
    report: Report,
    inputs: list[dict[str, np.ndarray]] | None = None,
    users: list[int] | None = None,
    transcripts: dict[str, Transcript] | None = None,
) -> None:
    """Re-run the protocol's analyzer, round by round, on the multisets the analyzer received
    (its public ``input_type`` messages, or ``inputs``); compare every broadcast round state and
    the published estimate with what the analyzer logged; re-run the privacy gate on the counts
    the transcripts give (``users``: per round, or the ``users`` field of each input message)
    and compare the ledger with the published privacy statement. Round states are what every
    receiver signed it received from the analyzer (``transcripts``), with what it logged."""
    from parties.runtime.codec import to_jsonable
    from protocols.base import received_counts, validate_batches
    from protocols.defences.fake_removal import analyze_with_fakes, announced_fakes
    from protocols.defences.noisy_threshold import threshold_release_entry
    from protocols.privacy.ledger import PrivacyRefusal, gate, ledger_json
    from protocols.workloads import recorded_workload

    pubs = [e for e in analyzer.entries if e["dir"] == "publish" and e["ty"] == "estimate"]
    if len(pubs) != 1:
        report.add(
            Check(
                "V-20",
                "published estimate",
                False,
                len(pubs),
                f"{analyzer.party} published {len(pubs)} estimates (expected 1)",
            )
        )
        return
    published = codec.loads(_blob(run_dir, analyzer.party, pubs[0]["dg"]))
    run = cluster["run"]
    protocol = recorded_workload(run["protocol"], dict(run.get("params", {}))).protocol
    if not _statement_checked(run_dir, analyzer, protocol, dict(run.get("params", {})), report):
        return
    metas: list[dict[str, Any]] = []  # the inputs' public fields (trusted shuffler)
    if inputs is None:
        ins = [e for e in analyzer.entries if e["dir"] == "recv" and e["ty"] == input_type]
        shaky = [e["i"] for e in ins if (analyzer.party, e["i"]) in report.unconfirmed]
        why = ""
        if len(ins) != protocol.n_rounds or not all(e["pub"] for e in ins):
            why = (
                f"{analyzer.party} logged {len(ins)} public {input_type!r} inputs, "
                f"expected {protocol.n_rounds}"
            )
        elif shaky:
            why = (
                f"{analyzer.party} entries {shaky}: the shuffled input is not in the "
                "sender's signed transcript, so the estimate cannot rest on it"
            )
        if why:
            report.add(Check("V-21", "recompute estimate", False, len(ins), why))
            return
        inputs = []
        for e in ins:
            obj = codec.loads(_blob(run_dir, analyzer.party, e["dg"]))
            inputs.append({k: codec.obj_to_array(v) for k, v in obj["batches"].items()})
            metas.append(obj)
        if users is None and all(isinstance(m.get("users"), int) for m in metas):
            users = [int(m["users"]) for m in metas]
    # round states the analyzer broadcast (one copy per receiver; all must be equal)
    states = broadcast_digests(transcripts or {analyzer.party: analyzer}, analyzer.party, "state")
    public: dict[str, Any] = {}
    n = 0
    released: list[Any] = []
    ledger_failure = (
        ""
        if users is not None and len(users) == len(inputs)
        else ("the transcripts give no user count for every round")
    )
    fakes_seen: list[tuple[int, int]] = []  # (fakes, users' reports) of rounds with fakes
    for rnd, batches in enumerate(inputs):
        specs = protocol.batch_specs_round(rnd, public)
        validate_batches(protocol, batches, specs)
        n += sum(int(v.shape[0]) for v in batches.values())
        # the uniform fakes the shuffler announced in its signed message (trusted shuffler)
        fakes = announced_fakes(metas[rnd]) if metas else {}
        if not ledger_failure:
            if metas and isinstance(metas[rnd].get("threshold"), dict):
                released.append(threshold_release_entry(metas[rnd]["threshold"], rnd))
            counts = received_counts(specs, batches, int(users[rnd]), fakes)  # type: ignore[index]
            try:
                released += gate(protocol, rnd, counts, previous=released)
            except PrivacyRefusal as exc:
                ledger_failure = f"round {rnd} does not pass the privacy gate: {exc}"
        again = to_jsonable(analyze_with_fakes(protocol, rnd, batches, public, fakes))
        if fakes:
            fakes_seen.append((sum(fakes.values()), int(again["reports"])))
        if rnd < len(inputs) - 1:
            sent = states.get(rnd + 1, {})
            why = (
                f"round {rnd + 1}: the analyzer broadcast {len(sent)} different states (must be "
                "exactly one, the same to everyone)"
            )
            if len(sent) == 1:
                dg, holder = next(iter(sent.items()))
                logged = codec.loads(_blob(run_dir, holder, dg))
                why = ""
                if not _close(again, logged):
                    why = f"round {rnd + 1} state differs from the analyzer's recomputation"
            if why:
                report.add(Check("V-21", "recompute round state", False, rnd, why))
                return
            public = again
    ok = _close(again, published)
    report.add(
        Check(
            "V-21",
            "recompute estimate",
            ok,
            n,
            f"analyzer re-run on {n} shuffled messages ({len(inputs)} round(s)) "
            + (
                "matches the published estimate"
                if ok
                else f"DIFFERS from the published estimate ({analyzer.party} entry {pubs[0]['i']})"
            ),
        )
    )
    result_path = run_dir / "result.json"
    if result_path.exists():
        import json

        res = json.loads(result_path.read_text())
        same = _close(res.get("estimate"), published)
        privs = [e for e in analyzer.entries if e["dir"] == "publish" and e["ty"] == "privacy"]
        signed_privacy = (
            codec.loads(_blob(run_dir, analyzer.party, privs[0]["dg"])) if len(privs) == 1 else None
        )
        same_privacy = signed_privacy is not None and _close(res.get("privacy"), signed_privacy)
        bound = _result_fields_failure(res, run, pubs[0]["dg"])
        report.add(
            Check(
                "V-22",
                "result.json",
                same and same_privacy and not bound,
                1,
                "estimate, privacy statement and the bound fields (07 R-1) equal the signed data"
                if same and same_privacy and not bound
                else "result.json estimate differs from the published artifact"
                if not same
                else "result.json privacy statement differs from the signed one"
                if signed_privacy is not None and not same_privacy
                else bound
                or f"{analyzer.party} published {len(privs)} privacy statements (expected 1)",
            )
        )
        if not ledger_failure:
            mine = to_jsonable(ledger_json(released))
            theirs = {k: (signed_privacy or {}).get(k) for k in ("releases", "total")}
            if not _close(mine, theirs):
                ledger_failure = (
                    "the published ledger (privacy.releases/total) differs from the one the "
                    "gate gives on the counts in the transcripts"
                )
        if not ledger_failure:
            ledger_failure = _fakes_failure(protocol, fakes_seen, signed_privacy or {})
        report.add(
            Check(
                "V-23",
                "privacy ledger",
                not ledger_failure,
                len(released),
                ledger_failure
                or f"{len(released)} release(s) re-derived from the signed counts; they match "
                "the published ledger",
            )
        )


def _result_fields_failure(res: dict[str, Any], run: dict[str, Any], estimate_dg: str) -> str:
    """07 R-1: result.json's protocol, shuffler, session and params are the cluster file's, and
    estimate_sha256 is the digest the analyzer signed for its estimate ("" when they are)."""
    from parties.verify.statement import same_json

    for key in ("protocol", "shuffler", "session"):
        if res.get(key) != run.get(key):
            return f"result.json {key} {res.get(key)!r} is not the cluster file's {run.get(key)!r}"
    if not same_json(res.get("params"), dict(run.get("params", {}))):
        return "result.json params differ from the cluster file's run.params"
    if res.get("estimate_sha256") != estimate_dg:
        return "result.json estimate_sha256 is not the digest of the signed estimate"
    return ""


def _statement_checked(
    run_dir: Path, analyzer: Transcript, protocol: Any, params: dict[str, Any], report: Report
) -> bool:
    """V-9: the signed privacy statement's fields outside the ledger are the public
    parameters' (``parties.verify.statement``); False (and a failed check) when not."""
    from parties.verify.statement import statement_failure

    privs = [e for e in analyzer.entries if e["dir"] == "publish" and e["ty"] == "privacy"]
    if len(privs) != 1:
        failure = f"{analyzer.party} published {len(privs)} privacy statements (expected 1)"
    else:
        signed = codec.loads(_blob(run_dir, analyzer.party, privs[0]["dg"]))
        failure = statement_failure(protocol, params, signed)
    report.add(
        Check(
            "V-9",
            "privacy statement",
            not failure,
            1,
            failure or "every field of the signed statement is what the public parameters give",
        )
    )
    return not failure


def _fakes_failure(protocol: Any, seen: list[tuple[int, int]], signed: dict[str, Any]) -> str:
    """ "" when the signed ``privacy.fakes`` is what the shuffler's signed fake count gives
    (``fakes_statement``), or absent when the shuffler announced no fakes; else the reason."""
    from parties.runtime.codec import to_jsonable
    from protocols.defences.fake_removal import fakes_statement

    if not seen:
        # a protocol may state fakes of its own (MURS: users who send one), not the shuffler's
        own = protocol.privacy().get("fakes")
        if "fakes" in signed and (own is None or not _close(to_jsonable(own), signed["fakes"])):
            return "the privacy statement describes fakes the shuffler never announced"
        return ""
    fakes, reports = seen[-1]
    mine = to_jsonable(fakes_statement(protocol, fakes, reports))
    if not _close(mine, signed.get("fakes")):
        return (
            f"privacy.fakes differs from the statement the shuffler's signed count of {fakes} "
            "uniform fakes gives"
        )
    return ""


def check_published_estimate(
    run_dir: Path, cluster: dict[str, Any], transcripts: Transcripts, report: Report, *_: object
) -> None:  # ``*_``: a ProtocolCheck's pool, unused (no proof checks here)
    """Trusted-shuffler runs: recompute the estimate; the shuffle itself is trusted."""
    analyzers = [p["name"] for p in cluster["party"] if p["role"] == "analyzer"]
    recompute_estimate(
        run_dir, cluster, transcripts[analyzers[0]], "shuffled", report, transcripts=transcripts
    )
    report.warnings.append(
        "trusted shuffler: the permutation is not verifiable (simulation "
        "backend); only channels, signatures and the estimate are checked"
    )
    report.warnings.append(
        "trusted shuffler: its fake count (the 'fakes' of its signed 'shuffled' messages, 0 when "
        "absent) is its own unverifiable claim: the estimate and privacy.fakes rest on its word"
    )


def mpc_users(
    run_dir: Path, cluster: dict[str, Any], transcripts: dict[str, Transcript], analyzer: str
) -> list[int] | None:
    """Per round, the users the MPC servers counted (in the meta of their signed, public output
    messages; every server must give the same number), or None if a round lacks it."""
    from parties.verify.mpc_outputs import server_outputs

    servers = [p["name"] for p in cluster["party"] if p["role"] == "mpc-server"]
    per_round: dict[int, set[Any]] = {}
    for s in servers:
        if s not in transcripts:
            return None
        for rd, (_, meta) in server_outputs(run_dir, transcripts[s], analyzer).items():
            per_round.setdefault(int(rd), set()).add(meta.get("users"))
    out = []
    for rd in sorted(per_round):
        values = per_round[rd]
        if len(values) != 1 or not isinstance(next(iter(values)), int):
            return None
        out.append(int(next(iter(values))))
    return out


def check_mpc_run(
    run_dir: Path, cluster: dict[str, Any], transcripts: Transcripts, report: Report, *_: object
) -> None:  # ``*_``: a ProtocolCheck's pool, unused (no proof checks here)
    """MPC runs: the analyzer publishes the multiset it reconstructed (one ``shuffled`` artifact
    per round); it must equal what the servers' signed output shares reconstruct to
    (``mpc_outputs.check_mpc_outputs``), and the estimate is recomputed from it. The
    semi-honest shuffle itself (that the servers permuted correctly) is not provable."""
    from parties.verify.mpc_outputs import check_mpc_outputs
    from protocols.workloads import recorded_workload

    analyzer = transcripts[[p["name"] for p in cluster["party"] if p["role"] == "analyzer"][0]]
    inputs, published = [], []
    for e in analyzer.entries:
        if e["dir"] == "publish" and e["ty"] == "shuffled":
            obj = codec.loads(_blob(run_dir, analyzer.party, e["dg"]))
            published.append(obj)
            inputs.append({k: codec.obj_to_array(v) for k, v in obj["batches"].items()})
    run = cluster["run"]
    protocol = recorded_workload(run["protocol"], dict(run.get("params", {}))).protocol
    states = {
        e["rd"]: codec.loads(_blob(run_dir, analyzer.party, e["dg"]))
        for e in analyzer.entries
        if e["dir"] == "send" and e["ty"] == "state"
    }
    bounds = [
        {
            s.name: s.bound
            for s in protocol.batch_specs_round(rnd, states.get(rnd, {}) if rnd else {})
        }
        for rnd in range(protocol.n_rounds)
    ]
    check_mpc_outputs(run_dir, cluster, transcripts, analyzer, published, bounds, report)
    recompute_estimate(
        run_dir,
        cluster,
        analyzer,
        "shuffled",
        report,
        inputs=inputs,
        users=mpc_users(run_dir, cluster, transcripts, analyzer.party),
        transcripts=transcripts,
    )
    if str(run.get("params", {}).get("security", "malicious-abort")) == "semi-honest":
        report.warnings.append(
            "MPC shuffler (semi-honest, honest majority): the transcripts prove who "
            "sent what and that the analyzer published the servers' output, not that the "
            "servers permuted correctly"
        )
    else:
        report.warnings.append(
            "MPC shuffler (malicious-abort): the checks that the servers permuted correctly "
            "are sound only while an honest majority of servers (t < m/2) follows the protocol"
        )
