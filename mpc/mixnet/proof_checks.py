"""Checks of the mix-net's sigma proofs and of the public DKG record (verifier side).

Client submissions (valid elements, a proof of knowledge of the randomness bound to the client
id, batch and message index, no duplicates: ``screen_submissions``), decryption shares (batched
Chaum-Pedersen proof against the Lagrange-weighted verification key) and the DKG (dealers'
proofs of knowledge, complaints and revealed shares, the joint key and the verification keys).
Imports only ``mpc.ristretto``, ``mpc.pools`` and ``mpc.mixnet.schema`` (never prover code).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

from mpc.mixnet.proofs.dkg_pok import verify_dkg_pok
from mpc.mixnet.schema import (
    VerifyError,
    bound_client_id,
    client_challenge,
)
from mpc.pools import process_pool
from mpc.ristretto import (
    IDENTITY,
    G,
    GroupError,
    L,
    check_point,
    msm,
    random_scalars,
    scalar_from_bytes,
    smul,
    smul_base,
    sub,
    sum_points,
)
from mpc.threshold import commitment_at

# ---------------------------------------------------------------- client proofs


def _parse_client_proof(
    sess: bytes,
    client: str,
    batch: str,
    index: int,
    a: Sequence[bytes],
    b: Sequence[bytes],
    proof: Any,
) -> tuple[int, list[int], list[bytes]] | str:
    """``(e, s, t)`` with every element validated and the challenge recomputed, or the reason."""
    try:
        for j, x in enumerate(a):
            check_point(x, f"a[{j}]")
        for j, x in enumerate(b):
            check_point(x, f"b[{j}]")
        if (
            not isinstance(proof, dict)
            or not isinstance(proof.get("s"), list)
            or not isinstance(proof.get("t"), list)
            or not len(proof["s"]) == len(proof["t"]) == len(b)
        ):
            return "malformed proof"
        ts = [check_point(x, f"proof.t[{j}]") for j, x in enumerate(proof["t"])]
        ss = [scalar_from_bytes(x, f"proof.s[{j}]") for j, x in enumerate(proof["s"])]
    except (GroupError, ValueError) as exc:
        return f"invalid element or scalar: {exc}"
    return client_challenge(sess, client, batch, index, list(a), list(b), ts), ss, ts


_BAD_PROOF = "proof of knowledge does not verify for this client id, batch and index"


def verify_client_proof(
    sess: bytes,
    client: str,
    batch: str,
    index: int,
    a: Sequence[bytes],
    b: Sequence[bytes],
    proof: Any,
) -> str | None:
    """``None`` if the submission's proof is valid, else the reason (elements are validated).

    Valid iff ``s_j G = T_j + e b_j`` for every component, ``e = client_challenge(.., T)``.
    """
    parsed = _parse_client_proof(sess, client, batch, index, a, b, proof)
    if isinstance(parsed, str):
        return parsed
    return None if _batch_holds([(parsed, b)]) else _BAD_PROOF


def _batch_holds(items: list[tuple[tuple[int, list[int], list[bytes]], Sequence[bytes]]]) -> bool:
    """One random linear combination of the Schnorr equations ``s_j G - T_j - e b_j = 0`` of
    ``items`` (weights drawn here, secret from the provers): false if any equation fails,
    except with probability 1/L. Public scalars: one native MSM when built."""
    zs = random_scalars(sum(len(b) for _, b in items))
    kg, ks, pts, k = 0, [], [], 0
    for (e, ss, ts), b in items:
        for s_j, t_j, b_j in zip(ss, ts, b):
            z = zs[k]
            k += 1
            kg += z * s_j
            ks += [-z % L, -z * e % L]
            pts += [t_j, b_j]
    kg %= L
    if kg:
        ks.append(kg)
        pts.append(G)
    try:
        return msm(ks, pts, "client proofs") == IDENTITY
    except GroupError:  # a zero product (probability 1/L per term): decide term by term
        return all(
            sub(smul_base(s_j), smul(e, b_j)) == t_j
            for (e, ss, ts), b in items
            for s_j, t_j, b_j in zip(ss, ts, b)
        )


def _bad_indices(items: list, offset: int = 0) -> list[int]:
    """Indices of the failing proofs, by halving a failed batch (each half one equation)."""
    if len(items) == 1:
        return [offset]
    h = len(items) // 2
    out = []
    for part, off in ((items[:h], offset), (items[h:], offset + h)):
        if not _batch_holds(part):
            out += _bad_indices(part, off)
    return out


def _client_proofs_chunk(sess: bytes, jobs: list[tuple[Any, ...]]) -> list[str | None]:
    """Verdicts of ``verify_client_proof`` for a chunk of (client, batch, index, a, b, proof):
    the well-formed proofs are checked in one batched equation; if it fails, halving finds
    every failing proof."""
    verdicts: list[str | None] = []
    items, where = [], []
    for i, (client, batch, index, a, b, proof) in enumerate(jobs):
        parsed = _parse_client_proof(sess, client, batch, index, a, b, proof)
        verdicts.append(parsed if isinstance(parsed, str) else None)
        if not isinstance(parsed, str):
            items.append((parsed, b))
            where.append(i)
    if items and not _batch_holds(items):
        for k in _bad_indices(items):
            verdicts[where[k]] = _BAD_PROOF
    return verdicts


def screen_submissions(
    sess: bytes,
    specs: dict[str, dict[str, Any]],
    subs: Sequence[Any],
    workers: int = 1,
    pool: Executor | None = None,
    *,
    parties: Sequence[str],
) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Accept or reject client submissions in order; returns accepted indices per batch and
    the rejections ``{"index", "party", "client", "batch", "reason"}``.

    ``parties[i]`` is the client party that sent submission ``i`` (its authenticated TLS
    peer). A submission's client id is namespaced by it: the proof is checked for, and
    replays are keyed on, the bound id ``party/client`` (``bound_client_id``), so one party can
    never occupy, or replay a proof made for, another party's ids.

    Rules, in this order: known batch; non-negative integer index; ``components`` elements per
    side; no repeated (client, batch, index) among accepted ones; no ``b`` component equal to a
    ``b`` component of an earlier accepted submission (replay or copy); valid non-identity
    elements and a proof of knowledge of the randomness bound to (session, client id, batch,
    index).

    Duplicates are screened on the ``b`` components only: the proof shows knowledge of their
    discrete logarithms, so only their author can submit them; an ``a`` component is free for
    anyone to copy, and screening on it would let whoever sees a victim's ciphertext first get
    the victim rejected.
    Proofs are checked in ``workers`` processes (their verdicts do not depend on order).
    """
    if len(parties) != len(subs):
        raise VerifyError(f"{len(parties)} submitting parties for {len(subs)} submissions")
    early: dict[int, str] = {}
    parsed: dict[int, tuple[str, str, int, list[bytes], list[bytes]]] = {}
    jobs: list[tuple[Any, ...]] = []
    for idx, sub_ in enumerate(subs):
        try:
            client = bound_client_id(parties[idx], str(sub_["client"]))
            batch, index = sub_["batch"], sub_["index"]
            if not isinstance(batch, str) or batch not in specs:
                early[idx] = f"wrong batch {batch!r}"
                continue
            if not isinstance(index, int) or index < 0:
                early[idx] = "bad message index"
                continue
            a, b = sub_["ct"]["a"], sub_["ct"]["b"]
            comps = specs[batch]["components"]
            if not (isinstance(a, list) and isinstance(b, list) and len(a) == comps == len(b)):
                early[idx] = f"ciphertext must have {comps} components"
                continue
            if not all(isinstance(x, bytes) for x in a + b):
                early[idx] = "invalid element: not bytes"
                continue
            parsed[idx] = (client, batch, index, a, b)
            jobs.append((client, batch, index, a, b, sub_["proof"]))
        except (KeyError, TypeError, AttributeError) as exc:
            early[idx] = f"malformed submission: {exc}"
    order = sorted(parsed)
    own = None
    if pool is None and workers > 1 and len(jobs) > 1:
        pool = own = process_pool(workers)
    try:
        if pool is None:
            verdicts = _client_proofs_chunk(sess, jobs)
        else:
            step = -(-len(jobs) // (4 * workers)) or 1
            chunks = [jobs[i : i + step] for i in range(0, len(jobs), step)]
            verdicts = [
                v
                for part in pool.map(_client_proofs_chunk, [sess] * len(chunks), chunks)
                for v in part
            ]
    finally:
        if own is not None:
            own.shutdown()
    proof_err = dict(zip(order, verdicts))

    accepted: dict[str, list[int]] = {name: [] for name in specs}
    rejected: list[dict[str, Any]] = []
    seen: set[bytes] = set()
    keys: set[tuple[str, str, int]] = set()
    for idx, sub_ in enumerate(subs):
        if idx in early:
            c = sub_.get("client") if isinstance(sub_, dict) else None
            bt = sub_.get("batch") if isinstance(sub_, dict) else None
            rejected.append(
                {
                    "index": idx,
                    "party": parties[idx],
                    "client": c,
                    "batch": bt,
                    "reason": early[idx],
                }
            )
            continue
        client, batch, index, a, b = parsed[idx]
        if (client, batch, index) in keys:
            reason = "replayed message index"
        elif any(x in seen for x in b):
            reason = "replayed or duplicate ciphertext (a b component repeats an accepted one)"
        else:
            reason = proof_err[idx]
        if reason is None:
            accepted[batch].append(idx)
            keys.add((client, batch, index))
            seen.update(b)
        else:
            rejected.append(
                {
                    "index": idx,
                    "party": parties[idx],
                    "client": sub_["client"],
                    "batch": batch,
                    "reason": reason,
                }
            )
    return accepted, rejected


def submitters(inputs: Sequence[dict[str, Any]]) -> list[str]:
    """The submitting party of every submission, from the record's ``inputs`` slices."""
    return [str(p["party"]) for p in inputs for _ in range(int(p["count"]))]


# ---------------------------------------------------------------- DKG


def verify_dkg(sess_id: str, k: int, t: int, dkg: Any) -> tuple[bytes, dict[int, bytes], list[int]]:
    """Recompute the qualified set, joint key and verification keys from the public DKG record.

    Record: ``{"commitments": {i: [t elements]}, "pok": {i: {e, s}}, "complaints": [{"by", "against",
    "share" (revealed scalar bytes or None)}], "qual": [...], "pk": ..., "vks": {i: element}}``.
    Returns ``(pk, vks, qual)``; raises ``VerifyError`` on any mismatch.
    """
    try:
        comms_raw = dkg["commitments"]
        comms: dict[int, list[bytes]] = {}
        for i in range(1, k + 1):
            if i not in comms_raw:
                continue
            cl = comms_raw[i]
            if not isinstance(cl, list) or len(cl) != t:
                raise VerifyError(f"dkg: dealer {i} must publish {t} commitments")
            comms[i] = [check_point(x, f"dkg.commitments[{i}][{m}]") for m, x in enumerate(cl)]
        qual = set(comms)
        for i in sorted(comms):
            if not verify_dkg_pok(sess_id, i, comms[i][0], dkg["pok"].get(i)):
                qual.discard(i)
        for comp in dkg.get("complaints", []):
            d = comp["against"]
            if d not in comms:
                continue
            share = comp.get("share")
            ok = False
            if share is not None:
                sv = scalar_from_bytes(share, f"dkg.complaint share of {d}")
                m = comp["by"]
                ok = smul_base(sv) == commitment_at(comms[d], m)
            if not ok:
                qual.discard(d)
    except (GroupError, ValueError, KeyError, TypeError) as exc:
        raise VerifyError(f"dkg: malformed record: {exc}") from None
    qual_l = sorted(qual)
    if qual_l != sorted(dkg.get("qual", [])):
        raise VerifyError(f"dkg: published qualified set {dkg.get('qual')} != recomputed {qual_l}")
    if len(qual_l) < t:
        raise VerifyError(f"dkg: only {len(qual_l)} qualified dealers, threshold {t}")
    pk = sum_points(comms[i][0] for i in qual_l)
    if pk != dkg.get("pk"):
        raise VerifyError("dkg: published public key is not the sum of qualified dealers' keys")
    vks = {m: sum_points(commitment_at(comms[i], m) for i in qual_l) for m in range(1, k + 1)}
    pub = dkg.get("vks", {})
    for m in range(1, k + 1):
        if pub.get(m) != vks[m]:
            raise VerifyError(f"dkg: verification key of server {m} does not match the commitments")
    return pk, vks, qual_l
