"""Proof checks of the public mix-net verifier. Imports only ``mpc.ristretto``, ``mpc.mixnet_schema``.

The DKG (dealers' proofs of knowledge, complaints and revealed shares, the joint key and the
servers' verification keys), client submissions (valid elements, proof bound to its client id
and batch, no duplicates), mix steps (Terelius-Wikstrom proof of shuffle, batched with random
weights so each base costs one multiplication and one addition) and decryption shares (batched
Chaum-Pedersen proof against the Lagrange-weighted key). ``mpc.mixnet_record_verifier`` applies
them to a whole run record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from mpc.mixnet_schema import (
    Ciphertexts,
    blob_points,
    blob_scalars,
    client_challenge,
    dec_share_seed,
    dkg_pok_challenge,
    dleq_challenge,
    perm_challenge_seed,
    scalar_vector,
    shuffle_challenge,
)
from mpc.pools import process_pool
from mpc.ristretto import (
    IDENTITY,
    G,
    GroupError,
    L,
    add,
    check_point,
    msm,
    msm_parallel,
    random_scalars,
    scalar_from_bytes,
    smul,
    smul_base,
    sub,
    sum_points,
)


class VerifyError(ValueError):
    """A check failed; the message names the artifact and the failing equation/index."""


def verifier_op_counts(w: int) -> dict[str, int]:
    """Group operations per ciphertext of the batched shuffle verification."""
    return {"V": 4 + 4 * w, "F": 0, "A": 4 + 4 * w}


# ---------------------------------------------------------------- shuffle proof


def _parse_shuffle_proof(proof: Any, n: int, w: int, where: str) -> dict[str, Any]:
    if not isinstance(proof, dict):
        raise VerifyError(f"{where}: proof must be a map")
    need = {
        "c",
        "chat",
        "that",
        "t1",
        "t2",
        "t3",
        "t4a",
        "t4b",
        "s1",
        "s2",
        "s3",
        "s4",
        "shat",
        "sprime",
    }
    if missing := need - set(proof):
        raise VerifyError(f"{where}: proof lacks {sorted(missing)}")
    try:
        p = {k: blob_points(proof[k], n, f"{where}.{k}") for k in ("c", "chat", "that")}
        for k in ("t1", "t2", "t3"):
            p[k] = check_point(proof[k], f"{where}.{k}")
        for k in ("t4a", "t4b"):
            if not isinstance(proof[k], list) or len(proof[k]) != w:
                raise VerifyError(f"{where}.{k}: expected {w} elements")
            p[k] = [check_point(x, f"{where}.{k}[{j}]") for j, x in enumerate(proof[k])]
        for k in ("s1", "s2", "s3"):
            p[k] = scalar_from_bytes(proof[k], f"{where}.{k}")
        if not isinstance(proof["s4"], list) or len(proof["s4"]) != w:
            raise VerifyError(f"{where}.s4: expected {w} scalars")
        p["s4"] = [scalar_from_bytes(x, f"{where}.s4[{j}]") for j, x in enumerate(proof["s4"])]
        p["shat"] = blob_scalars(proof["shat"], n, f"{where}.shat")
        p["sprime"] = blob_scalars(proof["sprime"], n, f"{where}.sprime")
    except GroupError as exc:
        raise VerifyError(str(exc)) from None
    except ValueError as exc:
        raise VerifyError(str(exc)) from None
    return p


@dataclass
class _StepTerms:
    """Coefficients of one mix step's equations after random weighting."""

    where: str
    own: list[tuple[list[int], list[bytes], str]]  # c, chat, that
    k_h: list[int]
    k_in: tuple[list[list[int]], list[list[int]]]  # (a, b) per component
    k_out: tuple[list[list[int]], list[list[int]]]
    fixed: list[tuple[int, bytes, str]]
    g_coef: int
    diag: tuple[Any, ...]


def _step_terms(
    sess: bytes,
    step: int,
    batch: str,
    pk: bytes,
    inp: Ciphertexts,
    out: Ciphertexts,
    proof: Any,
    gens: tuple[bytes, list[bytes]],
) -> _StepTerms:
    where = f"mix[{step}].{batch}"
    n, w = inp.n, inp.w
    if out.n != n or out.w != w:
        raise VerifyError(f"{where}: output has {out.n}x{out.w} ciphertexts, input {n}x{w}")
    if n < 2:
        raise VerifyError(f"{where}: fewer than 2 ciphertexts")
    h, hs = gens
    if len(hs) < n:
        raise VerifyError(f"{where}: {len(hs)} generators for {n} ciphertexts")
    hs = hs[:n]
    p = _parse_shuffle_proof(proof, n, w, where)
    cs, chat, that = p["c"], p["chat"], p["that"]
    useed = perm_challenge_seed(sess, step, batch, inp, out, cs)
    u = scalar_vector(useed, n)
    ch = shuffle_challenge(useed, chat, that, p["t1"], p["t2"], p["t3"], p["t4a"], p["t4b"])
    sp, shat = p["sprime"], p["shat"]
    prod_u = 1
    for x in u:
        prod_u = prod_u * x % L

    # secret random weights: b1..b4 per global equation, delta_i per chain equation
    b1, b2, b3 = random_scalars(3)
    b4a, b4b = random_scalars(w), random_scalars(w)
    delta = random_scalars(n)
    g_coef = (
        b1 * p["s1"]
        + b2 * p["s2"]
        + b3 * p["s3"]
        + sum(b4b[j] * p["s4"][j] for j in range(w))
        + sum(d * s for d, s in zip(delta, shat))
    ) % L
    fixed = (
        [
            (sum(b4a[j] * p["s4"][j] for j in range(w)) % L, pk, "pk"),
            (-b1 % L, p["t1"], "t1"),
            (-b2 % L, p["t2"], "t2"),
            (-b3 % L, p["t3"], "t3"),
            ((b2 * ch * prod_u + delta[0] * sp[0]) % L, h, "H"),
        ]
        + [(-b4a[j] % L, p["t4a"][j], f"t4a[{j}]") for j in range(w)]
        + [(-b4b[j] % L, p["t4b"][j], f"t4b[{j}]") for j in range(w)]
    )
    cb1, cb3 = ch * b1 % L, ch * b3 % L
    k_c = [(-cb1 - cb3 * x) % L for x in u]
    k_h = [(cb1 + b3 * s) % L for s in sp]
    k_chat = [(-ch * delta[i] + delta[i + 1] * sp[i + 1]) % L for i in range(n - 1)]
    k_chat.append((-ch * delta[n - 1] - ch * b2) % L)
    k_that = [-d % L for d in delta]
    k_in = (
        [[-ch * b4a[j] * x % L for x in u] for j in range(w)],
        [[-ch * b4b[j] * x % L for x in u] for j in range(w)],
    )
    k_out = (
        [[b4a[j] * s % L for s in sp] for j in range(w)],
        [[b4b[j] * s % L for s in sp] for j in range(w)],
    )
    own = [
        (k_c, cs, f"{where}.c"),
        (k_chat, chat, f"{where}.chat"),
        (k_that, that, f"{where}.that"),
    ]
    return _StepTerms(
        where, own, k_h, k_in, k_out, fixed, g_coef, (pk, inp, out, p, h, hs, u, ch, prod_u)
    )


def _finish(total: bytes, fixed: list[tuple[int, bytes, str]], g_coef: int) -> bytes:
    for k, pt, name in fixed:
        total = add(total, smul(k, pt, name))
    return add(total, smul_base(g_coef))


def verify_shuffle(
    sess: bytes,
    step: int,
    batch: str,
    pk: bytes,
    inp: Ciphertexts,
    out: Ciphertexts,
    proof: Any,
    gens: tuple[bytes, list[bytes]],
    workers: int = 1,
    pool: Executor | None = None,
) -> None:
    """Check one proof of shuffle; raises ``VerifyError`` naming the failing part.

    All equations are combined with secret random weights into one multi-exponentiation that
    must be the identity (each base costs one multiplication and one addition, and decoding
    failures name the element); on failure each equation is re-checked alone to name it.
    """
    st = _step_terms(sess, step, batch, pk, inp, out, proof, gens)
    w = inp.w
    terms = st.own + [(st.k_h, gens[1][: inp.n], f"{st.where}.H_i")]
    for j in range(w):
        terms += [
            (st.k_in[0][j], inp.a[j], f"{st.where}.input.a[{j}]"),
            (st.k_in[1][j], inp.b[j], f"{st.where}.input.b[{j}]"),
            (st.k_out[0][j], out.a[j], f"{st.where}.output.a[{j}]"),
            (st.k_out[1][j], out.b[j], f"{st.where}.output.b[{j}]"),
        ]
    try:
        total = _finish(msm_parallel(terms, workers, pool), st.fixed, st.g_coef)
    except GroupError as exc:
        raise VerifyError(f"{st.where}: {exc}") from None
    if total != IDENTITY:
        _diagnose_shuffle(st.where, *st.diag)
        raise VerifyError(f"{st.where}: batched shuffle equation fails")


def verify_mix_chain(
    sess: bytes,
    batch: str,
    pk: bytes,
    lists: list[Ciphertexts],
    steps: list[int],
    proofs: list[Any],
    gens: tuple[bytes, list[bytes]],
    workers: int = 1,
    pool: Executor | None = None,
    tick: Callable[[float], None] | None = None,
) -> None:
    """Check consecutive mix steps ``lists[s] -> lists[s+1]`` (proof ``proofs[s]`` of server
    ``steps[s]``) in one batched equation: a list that is the output of one step and the input
    of the next, and the shared generators ``H_i``, cost one term each. On failure the steps
    are checked one by one to name the first failing step.
    """
    if len(lists) != len(proofs) + 1 or len(steps) != len(proofs):
        raise ValueError("verify_mix_chain: need len(lists) == len(proofs) + 1 == len(steps) + 1")
    sts = [
        _step_terms(sess, steps[s], batch, pk, lists[s], lists[s + 1], proofs[s], gens)
        for s in range(len(proofs))
    ]
    n, w = lists[0].n, lists[0].w
    terms: list[tuple[list[int], list[bytes], str]] = []
    k_h = [0] * n
    fixed: list[tuple[int, bytes, str]] = []
    g_coef = 0
    for st in sts:
        terms += st.own
        k_h = [(x + y) % L for x, y in zip(k_h, st.k_h)]
        fixed += [(k, pt, f"{st.where}.{name}") for k, pt, name in st.fixed]
        g_coef += st.g_coef
    terms.append((k_h, gens[1][:n], f"mix.{batch}.H_i"))
    for m, lst in enumerate(lists):
        for side, cols in ((0, lst.a), (1, lst.b)):
            for j in range(w):
                k = [0] * n
                if m < len(sts):
                    k = [(x + y) % L for x, y in zip(k, sts[m].k_in[side][j])]
                if m > 0:
                    k = [(x + y) % L for x, y in zip(k, sts[m - 1].k_out[side][j])]
                terms.append((k, cols[j], f"mix list {m} of {batch}, {'ab'[side]}[{j}]"))
    try:
        total = _finish(msm_parallel(terms, workers, pool, tick), fixed, g_coef % L)
    except GroupError as exc:
        total = None
        err = str(exc)
    if total == IDENTITY:
        return
    for s in range(len(sts)):  # locate: the first failing step raises
        verify_shuffle(
            sess, steps[s], batch, pk, lists[s], lists[s + 1], proofs[s], gens, workers, pool
        )
    raise VerifyError(
        f"mix chain of {batch}: batched equation fails ({err if total is None else 'no step'})"
    )


def _diagnose_shuffle(
    where: str,
    pk: bytes,
    inp: Ciphertexts,
    out: Ciphertexts,
    p: dict[str, Any],
    h: bytes,
    hs: list[bytes],
    u: list[int],
    ch: int,
    prod_u: int,
) -> None:
    """Re-check each equation alone (only after a failed batch) and raise naming the first."""
    n, w = inp.n, inp.w
    cs, chat, that, sp, shat = p["c"], p["chat"], p["that"], p["sprime"], p["shat"]
    cbar = sub(sum_points(cs), sum_points(hs))
    if smul_base(p["s1"]) != add(p["t1"], smul(ch, cbar)):
        raise VerifyError(f"{where}: permutation commitments do not sum to sum(H_i) (eq. 1)")
    chat_n = sub(chat[-1], smul(prod_u, h))
    if smul_base(p["s2"]) != add(p["t2"], smul(ch, chat_n)):
        raise VerifyError(f"{where}: chain end is not a commitment to prod(u) (eq. 2)")
    ctil = msm(u, cs)
    if add(smul_base(p["s3"]), msm(sp, hs)) != add(p["t3"], smul(ch, ctil)):
        raise VerifyError(f"{where}: permutation commitment inconsistent with responses (eq. 3)")
    for j in range(w):
        lhs = add(smul(p["s4"][j], pk), msm(sp, out.a[j]))
        if lhs != add(p["t4a"][j], smul(ch, msm(u, inp.a[j]))):
            raise VerifyError(
                f"{where}: output is not a re-encryption of the input (eq. 4a, component {j})"
            )
        lhs = add(smul_base(p["s4"][j]), msm(sp, out.b[j]))
        if lhs != add(p["t4b"][j], smul(ch, msm(u, inp.b[j]))):
            raise VerifyError(
                f"{where}: output is not a re-encryption of the input (eq. 4b, component {j})"
            )
    prev = h
    for i in range(n):
        if add(smul_base(shat[i]), smul(sp[i], prev)) != add(that[i], smul(ch, chat[i])):
            raise VerifyError(f"{where}: chain step {i} fails (eq. 5)")
        prev = chat[i]


# ---------------------------------------------------------------- client proofs


def verify_client_proof(
    sess: bytes,
    client: str,
    batch: str,
    index: int,
    a: Sequence[bytes],
    b: Sequence[bytes],
    proof: Any,
) -> str | None:
    """``None`` if the submission's proof is valid, else the reason (elements are validated)."""
    try:
        for j, x in enumerate(a):
            check_point(x, f"a[{j}]")
        for j, x in enumerate(b):
            check_point(x, f"b[{j}]")
        if (
            not isinstance(proof, dict)
            or not isinstance(proof.get("s"), list)
            or len(proof["s"]) != len(b)
        ):
            return "malformed proof"
        e = scalar_from_bytes(proof.get("e"), "proof.e")
        ss = [scalar_from_bytes(s, f"proof.s[{j}]") for j, s in enumerate(proof["s"])]
        ts = [sub(smul_base(s), smul(e, bj, f"b[{j}]")) for j, (s, bj) in enumerate(zip(ss, b))]
    except (GroupError, ValueError) as exc:
        return f"invalid element or scalar: {exc}"
    if client_challenge(sess, client, batch, index, list(a), list(b), ts) != e:
        return "proof of knowledge does not verify for this client id, batch and index"
    return None


def _client_proofs_chunk(sess: bytes, jobs: list[tuple[Any, ...]]) -> list[str | None]:
    """Verdicts of ``verify_client_proof`` for a chunk of (client, batch, index, a, b, proof)."""
    return [verify_client_proof(sess, *job) for job in jobs]


def screen_submissions(
    sess: bytes,
    specs: dict[str, dict[str, Any]],
    subs: Sequence[Any],
    workers: int = 1,
    pool: Executor | None = None,
) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Accept or reject client submissions in order; returns accepted indices per batch and
    the rejections ``{"index", "client", "batch", "reason"}``.

    Rules, in this order: known batch; non-negative integer index; ``components`` elements per
    side; no repeated (client, batch, index) among accepted ones; no element equal to an
    element of an earlier accepted submission (replay or copy); valid non-identity elements
    and a proof of knowledge of the randomness bound to (session, client id, batch, index).
    Proofs are checked in ``workers`` processes (their verdicts do not depend on order).
    """
    early: dict[int, str] = {}
    parsed: dict[int, tuple[str, str, int, list[bytes], list[bytes]]] = {}
    jobs: list[tuple[Any, ...]] = []
    for idx, sub_ in enumerate(subs):
        try:
            client, batch, index = str(sub_["client"]), sub_["batch"], sub_["index"]
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
            rejected.append({"index": idx, "client": c, "batch": bt, "reason": early[idx]})
            continue
        client, batch, index, a, b = parsed[idx]
        if (client, batch, index) in keys:
            reason = "replayed message index"
        elif any(x in seen for x in a + b):
            reason = "replayed or duplicate ciphertext"
        else:
            reason = proof_err[idx]
        if reason is None:
            accepted[batch].append(idx)
            keys.add((client, batch, index))
            seen.update(a + b)
        else:
            rejected.append({"index": idx, "client": client, "batch": batch, "reason": reason})
    return accepted, rejected


# ---------------------------------------------------------------- DLEQ / decryption shares


def verify_dleq(
    label: str, ctx: bytes, g1: bytes, y1: bytes, g2: bytes, y2: bytes, e: int, s: int
) -> bool:
    """Chaum-Pedersen check ``log_g1 y1 = log_g2 y2`` for a proof ``(e, s)``."""
    try:
        t1 = sub(smul_base(s) if g1 == G else smul(s, g1), smul(e, y1))
        t2 = sub(smul(s, g2), smul(e, y2))
    except GroupError:
        return False
    return dleq_challenge(label, ctx, g1, y1, g2, y2, t1, t2) == e


def verify_dec_shares(
    sess: bytes,
    server: int,
    batch: str,
    y: bytes,
    bs: Sequence[Sequence[bytes]],
    ds: Sequence[Sequence[bytes]],
    proof: Any,
    workers: int = 1,
    pool: Executor | None = None,
    *,
    dset: Sequence[int],
) -> str | None:
    """``None`` if server ``server``'s shares ``ds`` of ``bs`` verify against the key ``y``.

    ``y`` is the key the shares were made with: ``lambda_j Y_j`` for a share weighted for the
    decryption set ``dset`` (``weighted_key``).
    """
    try:
        if len(ds) != len(bs) or any(len(d) != len(b) for d, b in zip(ds, bs)):
            return "share count does not match ciphertexts"
        seed = dec_share_seed(
            sess, server, batch, dset, [list(c) for c in bs], [list(c) for c in ds]
        )
        flat_b = [p for col in bs for p in col]
        flat_d = [p for col in ds for p in col]
        rho = scalar_vector(seed, len(flat_b))
        bsum = msm_parallel([(rho, flat_b, "ciphertext")], workers, pool)
        dsum = msm_parallel([(rho, flat_d, "share")], workers, pool)
        e = scalar_from_bytes(proof["e"], "proof.e")
        s = scalar_from_bytes(proof["s"], "proof.s")
    except (GroupError, ValueError, KeyError, TypeError) as exc:
        return f"invalid share or proof: {exc}"
    if not verify_dleq("dec", seed, G, y, bsum, dsum, e, s):
        return "decryption-share proof (DLEQ) fails"
    return None


def weighted_key(vk: bytes, server: int, dset: Sequence[int]) -> bytes:
    """``lambda_server Y_server``: the key of a share weighted for decryption set ``dset``."""
    if server not in dset:
        raise ValueError(f"server {server} is not in the decryption set {list(dset)}")
    return smul(lagrange0(list(dset))[list(dset).index(server)], vk, f"verification key {server}")


def lagrange0(xs: Sequence[int]) -> list[int]:
    """Lagrange coefficients at 0 (verifier's own copy)."""
    out = []
    for i, xi in enumerate(xs):
        num = den = 1
        for k, xk in enumerate(xs):
            if k != i:
                num = num * xk % L
                den = den * (xk - xi) % L
        out.append(num * pow(den, -1, L) % L)
    return out


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
                ok = smul_base(sv) == _eval_commit(comms[d], m)
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
    vks = {m: sum_points(_eval_commit(comms[i], m) for i in qual_l) for m in range(1, k + 1)}
    pub = dkg.get("vks", {})
    for m in range(1, k + 1):
        if pub.get(m) != vks[m]:
            raise VerifyError(f"dkg: verification key of server {m} does not match the commitments")
    return pk, vks, qual_l


def verify_dkg_pok(sess_id: str, dealer: int, c0: bytes, pok: Any) -> bool:
    """Schnorr proof of knowledge of the dealer's constant term ``c0 = a0 G``."""
    try:
        e = scalar_from_bytes(pok["e"], "pok.e")
        s = scalar_from_bytes(pok["s"], "pok.s")
        tt = sub(smul_base(s), smul(e, c0))
    except (GroupError, ValueError, KeyError, TypeError):
        return False
    return dkg_pok_challenge(sess_id, dealer, c0, tt) == e


def _eval_commit(comm: Sequence[bytes], x: int) -> bytes:
    """``sum_m x^m C_m`` (Feldman: commitment to the polynomial's value at ``x``)."""
    return msm([pow(x, m, L) for m in range(len(comm))], list(comm), "commitment")
