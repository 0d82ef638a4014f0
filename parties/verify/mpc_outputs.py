"""``sdp verify`` for MPC-shuffler runs: the analyzer's published input is what the servers output.

Every MPC server sends its output shares to the analyzer as public entries of its own signed
transcript (``mpc-output`` messages, one or more chunks per round; the last chunk has
``last: true`` and the server's meta: ``mode``, ``rejected_rows`` and, in histogram mode,
``invalid_rows``). This check reads them from the servers' transcripts (not the analyzer's),
checks that the m shares of every value lie on one polynomial of degree t, reconstructs and
compares, round by round, with the ``shuffled`` artifact the analyzer published:

* open mode: the published rows of each batch are, as a multiset, exactly the reconstructed
  rows inside the batch's domain [0, bound), and the published invalid count is the number of
  the other rows plus the rejected submissions' rows (plus, in malicious-abort mode, the rows
  the servers' domain check removed before output, ``invalid_rows``);
* histogram mode: the published multiset is the one the reconstructed counts describe, and
  the invalid count is the servers' opened count plus the rejected rows.

Malicious-abort runs (cluster parameter ``security``, default ``malicious-abort``): the last
chunk's meta also holds ``security`` and ``checks``, the server's shares of everything the
servers opened to check the run (``parties.mpc_shuffle.malicious.CheckLog``): ``coins`` (the
joint coin openings), ``inputs`` with ``input_clients`` (masked random combinations of each
client's sharing, 3 per client), ``mac`` (per batch, the 3 MAC check values) and, with the
cluster parameter ``mpc_multiset``, ``multiset`` (per batch, the masked multiset check value).
``check_abort_checks`` re-checks them: the m
servers' shares of every opened value lie on one polynomial of degree t, the MAC and multiset
values reconstruct to 0, and every client whose combination was inconsistent is among the
rejected clients. This shows an auditor that the checks ran and passed; their soundness rests
on an honest majority of servers (t < m/2), as the run's does (``docs/security.md``).

Payload schema of one chunk (CBOR map): ``batches``: {name: {``shape``: [rows, width],
``data``: little-endian uint32 field elements of GF(2^31 - 1)}}, plus the meta fields. Server i
in the cluster file's order holds the evaluation at x = i + 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mpc import mac_check, shamir
from parties.runtime import codec
from parties.verify import mpc_inputs
from parties.verify.transcripts import Check, Report, Transcript, certificate_keys

SERVER_ROLE = "mpc-server"
OUTPUT_TYPE = "mpc-output"


class OutputMismatch(ValueError):
    """The servers' output and the analyzer's publication disagree (message names where)."""


def _blob(run_dir: Path, party: str, digest: str) -> bytes:
    return (run_dir / "transcripts" / f"{party}.blobs" / digest).read_bytes()


def _decode_chunk(payload: bytes, where: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    obj = codec.loads(payload)
    if not isinstance(obj, dict) or not isinstance(obj.get("batches"), dict):
        raise OutputMismatch(f"{where}: payload is not a map with a 'batches' map")
    arrays = {}
    for k, v in obj["batches"].items():
        if not isinstance(v, dict) or set(v) != {"shape", "data"}:
            raise OutputMismatch(f"{where}: batch {k!r} must have keys shape, data")
        shape = v["shape"]
        if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
            raise OutputMismatch(f"{where}: batch {k!r} has a bad shape {shape!r}")
        try:
            arrays[k] = shamir.from_wire(v["data"], tuple(shape), f"{where} batch {k!r}")
        except ValueError as exc:
            raise OutputMismatch(str(exc)) from None
    return arrays, {k: v for k, v in obj.items() if k != "batches"}


def server_outputs(
    run_dir: Path, server: Transcript, analyzer: str
) -> dict[int, tuple[dict[str, np.ndarray], dict[str, Any]]]:
    """Per round: the output shares ``server`` sent ``analyzer`` and the meta of the last chunk."""
    chunks: dict[int, list[dict[str, Any]]] = {}
    for e in server.entries:
        if e["dir"] == "send" and e["ty"] == OUTPUT_TYPE and e["peer"] == analyzer:
            chunks.setdefault(int(e["rd"]), []).append(e)
    out = {}
    for rd, entries in sorted(chunks.items()):
        where = f"{server.party} round {rd} output"
        if not all(e["pub"] for e in entries):
            raise OutputMismatch(
                f"{where}: the shares are private transcript entries, not in the public record"
            )
        blocks, meta = [], {}
        for e in entries:
            arrays, meta = _decode_chunk(_blob(run_dir, server.party, e["dg"]), where)
            blocks.append(arrays)
        if meta.get("last") is not True:
            raise OutputMismatch(f"{where}: the last chunk is not marked last")
        merged = {}
        for k in sorted({k for b in blocks for k in b}):
            parts = [b[k] for b in blocks if k in b]
            if len({p.shape[1:] for p in parts}) != 1:
                raise OutputMismatch(f"{where}: chunks of batch {k!r} have different widths")
            merged[k] = np.concatenate(parts)
        out[rd] = (merged, meta)
    return out


def _rows(a: np.ndarray) -> list[tuple[int, ...]]:
    return sorted(map(tuple, np.asarray(a, dtype=np.int64).reshape(len(a), -1).tolist()))


def _agree(metas: list[dict[str, Any]], key: str, servers: list[str], where: str) -> Any:
    values = [m.get(key) for m in metas]
    if any(v != values[0] for v in values):
        raise OutputMismatch(
            f"{where}: the servers report different {key!r}: {dict(zip(servers, values))}"
        )
    return values[0]


def compare_round(
    rd: int,
    shares: list[dict[str, np.ndarray]],
    metas: list[dict[str, Any]],
    servers: list[str],
    t: int,
    mode: str,
    bounds: dict[str, int],
    published: dict[str, Any],
) -> int:
    """Reconstruct round ``rd`` from the servers' shares and compare it with the analyzer's
    published artifact (``batches``, ``invalid``); returns the number of values checked.
    OutputMismatch names the round, batch and what differs."""
    where = f"round {rd}"
    if _agree(metas, "mode", servers, where) != mode:
        raise OutputMismatch(
            f"{where}: the servers ran mode {metas[0].get('mode')!r}, not {mode!r}"
        )
    rejected = _agree(metas, "rejected_rows", servers, where) or {}
    opened_invalid = _agree(metas, "invalid_rows", servers, where) or {}
    names = set(shares[0])
    if any(set(s) != names for s in shares) or names != set(bounds):
        raise OutputMismatch(
            f"{where}: the servers output batches {sorted(names)}, expected {sorted(bounds)}"
        )
    pub_batches, pub_invalid = published.get("batches", {}), published.get("invalid", {})
    if set(pub_batches) != names:
        raise OutputMismatch(
            f"{where}: the analyzer published batches {sorted(pub_batches)}, the servers output "
            f"{sorted(names)}"
        )
    checked = 0
    for k in sorted(names):
        allsh = [s[k] for s in shares]
        if len({a.shape for a in allsh}) != 1:
            raise OutputMismatch(f"{where} batch {k!r}: the servers' share arrays differ in shape")
        stack = np.stack(allsh)
        if not shamir.consistent(stack, t).all():
            raise OutputMismatch(
                f"{where} batch {k!r}: the servers' output shares do not lie on one polynomial "
                f"of degree {t} (a server deviated)"
            )
        vals = shamir.reconstruct(stack[: t + 1], list(range(t + 1)))
        checked += int(vals.size)
        rej = int(rejected.get(k, 0))
        if mode == "open":
            bad = ((vals < 0) | (vals >= bounds[k])).any(axis=1)
            # malicious-abort: rows found out of the domain on shares are not in the output;
            # the servers report their number (opened only as pass/fail per shuffled row)
            want_rows = vals[~bad]
            want_invalid = int(bad.sum()) + rej + int(opened_invalid.get(k, 0))
        else:
            if vals.shape[0] != 1 or (vals >= shamir.PRIME // 2).any():
                raise OutputMismatch(
                    f"{where} batch {k!r}: reconstructed counts are not a width-1 histogram"
                )
            want_rows = np.repeat(np.arange(vals.shape[1], dtype=np.int64), vals[0]).reshape(-1, 1)
            want_invalid = int(opened_invalid.get(k, 0)) + rej
        got = codec.obj_to_array(pub_batches[k])
        if _rows(got) != _rows(want_rows):
            raise OutputMismatch(
                f"{where} batch {k!r}: the analyzer published {len(got)} messages that are NOT "
                f"the multiset the servers output ({len(want_rows)} messages)"
            )
        if int(pub_invalid.get(k, -1)) != want_invalid:
            raise OutputMismatch(
                f"{where} batch {k!r}: the analyzer published {pub_invalid.get(k)} invalid "
                f"messages, the servers' output gives {want_invalid}"
            )
    return checked


def check_abort_checks(
    rd: int,
    metas: list[dict[str, Any]],
    servers: list[str],
    t: int,
    security: str,
    multiset: bool = False,
) -> int:
    """Re-check round ``rd``'s opened check values from the servers' signed shares; returns
    how many values were checked. OutputMismatch names the check that fails. The multiset
    check's values are required with ``multiset`` (cluster parameter ``mpc_multiset``) and
    checked whenever present."""
    where = f"round {rd}"
    ran = _agree(metas, "security", servers, where)
    if ran != security:
        raise OutputMismatch(
            f"{where}: the servers ran security "
            + (repr(ran) if ran is not None else "semi-honest (no mode recorded: before issue 25)")
            + f", the cluster asks for {security!r}"
        )
    if security != "malicious-abort":
        return 0
    checks = [m.get("checks") for m in metas]
    if not all(isinstance(c, dict) for c in checks):
        lacking = [s for s, c in zip(servers, checks, strict=True) if not isinstance(c, dict)]
        raise OutputMismatch(f"{where}: no malicious-abort check values from {lacking}")

    def stack(path: tuple[str, ...], what: str) -> np.ndarray:
        rows = []
        for s, c in zip(servers, checks, strict=True):
            v: Any = c
            for key in path:
                v = v.get(key) if isinstance(v, dict) else None
            if not (isinstance(v, list) and all(isinstance(x, int) for x in v)):
                raise OutputMismatch(f"{where}: {s} gives no shares of the {what}")
            rows.append(v)
        if len({len(r) for r in rows}) != 1:
            raise OutputMismatch(f"{where}: the servers give different numbers of {what} shares")
        try:
            a = shamir.check_field(np.array(rows, dtype=np.int64), f"{where} {what}")
        except (ValueError, OverflowError) as exc:
            raise OutputMismatch(str(exc)) from None
        return a

    checked = 0
    for name in sorted(checks[0].get("coins", {})):
        coin = stack(("coins", name), f"coin opening {name!r}")
        if not shamir.consistent(coin, t).all():
            raise OutputMismatch(f"{where}: the coin opening {name!r} is inconsistent")
        checked += coin.shape[1]
    clients = _agree(checks, "input_clients", servers, where) or []
    inputs = stack(("inputs",), "client-sharing checks")
    if clients and inputs.shape[1] % len(clients):
        raise OutputMismatch(f"{where}: client-sharing checks do not match the clients checked")
    if clients:
        ok = shamir.consistent(inputs, t).reshape(len(clients), -1).all(axis=1)
        rejected = set(_agree(metas, "rejected_clients", servers, where) or [])
        accepted_bad = [
            c for c, good in zip(clients, ok, strict=True) if not good and c not in rejected
        ]
        if accepted_bad:
            raise OutputMismatch(
                f"{where}: the sharing of {', '.join(accepted_bad)} failed the degree check "
                f"but was used"
            )
        checked += inputs.shape[1]
    for key, what in (("mac", "MAC check"), ("multiset", "multiset check")):
        batches = checks[0].get(key)
        if key == "multiset" and not multiset and not batches:
            continue  # not asked for: the MAC check covers non-permutations too
        if not isinstance(batches, dict) or not batches:
            raise OutputMismatch(f"{where}: no {what} values")
        for b in sorted(batches):
            v = stack((key, b), f"{what} of batch {b!r}")
            if not shamir.consistent(v, t).all():
                raise OutputMismatch(
                    f"{where}: the servers' shares of the {what} of batch {b!r} do not lie on "
                    f"one polynomial of degree {t}"
                )
            if (shamir.reconstruct(v[: t + 1], list(range(t + 1))) != 0).any():
                raise OutputMismatch(
                    f"{where}: the {what} of batch {b!r} opens to a non-zero value (a server "
                    f"deviated) but the run was published"
                )
            checked += v.shape[1]
    return checked


def check_mpc_outputs(
    run_dir: Path,
    cluster: dict[str, Any],
    transcripts: dict[str, Transcript],
    analyzer: Transcript,
    published: list[dict[str, Any]],
    bounds_per_round: list[dict[str, int]],
    report: Report,
) -> None:
    """Tie every round's published input of ``analyzer`` to the servers' signed output shares."""
    servers = [p["name"] for p in cluster["party"] if p["role"] == SERVER_ROLE]
    params = dict(cluster.get("run", {}).get("params", {}))
    m = len(servers)
    t = int(params.get("mpc_threshold", (m - 1) // 2))
    mode = str(params.get("mpc_mode", "open"))
    security = str(params.get("security", "malicious-abort"))
    multiset = mac_check.flag(params.get("mpc_multiset", False))
    name = "MPC output vs servers' shares"
    abort_checked = 0
    convicted: list[int] = []
    try:
        if m < 3 or not (0 < t and 2 * t < m):
            raise OutputMismatch(f"the cluster has {m} MPC servers with threshold {t}")
        missing = [s for s in servers if s not in transcripts]
        if missing:
            raise OutputMismatch(f"no transcript of server(s) {', '.join(missing)}")
        outs = [server_outputs(run_dir, transcripts[s], analyzer.party) for s in servers]
        if len(published) != len(bounds_per_round):
            raise OutputMismatch(
                f"{analyzer.party} published {len(published)} shuffled inputs for "
                f"{len(bounds_per_round)} rounds"
            )
        checked = 0
        for rd, (pub, bounds) in enumerate(zip(published, bounds_per_round, strict=True)):
            lacking = [s for s, o in zip(servers, outs, strict=True) if rd not in o]
            if lacking:
                raise OutputMismatch(
                    f"round {rd}: no public output shares from {', '.join(lacking)}"
                )
            checked += compare_round(
                rd,
                [o[rd][0] for o in outs],
                [o[rd][1] for o in outs],
                servers,
                t,
                mode,
                bounds,
                pub,
            )
            abort_checked += check_abort_checks(
                rd, [o[rd][1] for o in outs], servers, t, security, multiset
            )
            if security == "malicious-abort":
                convicted.append(_input_evidence(run_dir, cluster, servers, t, rd, outs))
    except OutputMismatch as exc:
        report.add(
            Check(
                "V-30",
                name,
                False,
                0,
                f"{exc} ({analyzer.party}'s publication is not tied to the servers)",
            )
        )
        return
    report.add(
        Check(
            "V-30",
            name,
            True,
            checked,
            f"{len(published)} round(s): the analyzer's published input equals the multiset "
            f"reconstructed from the {m} servers' signed output shares",
        )
    )
    report.add(
        Check(
            "V-30",
            "MPC abort checks",
            True,
            abort_checked,
            f"security {security}: "
            + (
                f"the MAC {'and multiset checks open' if multiset else 'check opens'} to 0 and "
                "every opened coin and client-sharing "
                f"check is consistent in the {m} servers' signed shares (sound while at most "
                f"{t} servers deviate)"
                if security == "malicious-abort"
                else "no checks (semi-honest mode: a deviating server can change the output)"
            ),
        )
    )
    if security == "malicious-abort":
        report.add(
            Check(
                "V-31",
                "MPC input evidence",
                True,
                sum(convicted),
                f"{sum(convicted)} client part(ies) refused, each convicted by its own signed "
                "data (V-31)"
                if sum(convicted)
                else "no client was refused as deviating",
            )
        )


def _input_evidence(
    run_dir: Path, cluster: dict[str, Any], servers: list[str], t: int, rd: int, outs: list
) -> int:
    """V-31 on a published round (``mpc_inputs.check_round_evidence``); OutputMismatch."""
    keys = certificate_keys(run_dir, [p["name"] for p in cluster["party"]])
    label = mpc_inputs.round_label(cluster["run"]["session"], rd)
    try:
        return mpc_inputs.check_round_evidence(keys, label, servers, t, [o[rd][1] for o in outs])
    except ValueError as exc:
        raise OutputMismatch(f"round {rd}: input evidence (V-31): {exc}") from None


def check_mpc_abort_evidence(
    run_dir: Path, cluster: dict[str, Any], transcripts: dict[str, Transcript], report: Report
) -> None:
    """V-31 on an aborted MPC run: a server that aborted the input check sent the analyzer,
    in a public entry of its signed transcript, the culprit and the signed reports; the check
    "MPC input evidence" names the server they convict, or fails if they prove nothing."""
    servers = [p["name"] for p in cluster["party"] if p["role"] == SERVER_ROLE]
    if not servers:  # no MPC shuffler servers: another shuffler's run
        return
    analyzer = next((p["name"] for p in cluster["party"] if p["role"] == "analyzer"), None)
    params = dict(cluster.get("run", {}).get("params", {}))
    t = int(params.get("mpc_threshold", (len(servers) - 1) // 2))
    keys = certificate_keys(run_dir, [p["name"] for p in cluster["party"]])
    for s in servers:
        if s not in transcripts or analyzer is None:
            continue
        try:
            outs = server_outputs(run_dir, transcripts[s], analyzer)
        except OutputMismatch:
            continue
        for rd, (_, meta) in outs.items():
            if "abort" not in meta or "input_evidence" not in meta:
                continue
            label = mpc_inputs.round_label(cluster["run"]["session"], rd)
            ok, why = mpc_inputs.abort_verdicts(keys, label, servers, t, meta)
            report.add(Check("V-31", "MPC input evidence", ok, 1, f"{s} aborted round {rd}: {why}"))
