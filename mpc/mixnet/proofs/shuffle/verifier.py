"""Verifier of the proof of shuffle (docs/spec/05-mixnet.md V-16, S-4/S-5), one step or a chain
of steps batched.

Every equation of a step is combined with secret random weights into one multi-exponentiation
(each base costs one multiplication and one addition); in a chain, a list that is the output
of one step and the input of the next, and the shared generators, cost one term each. On
failure the equations are re-checked one by one to name the failing one. Imports only
``mpc.ristretto``, ``mpc.pools``, ``mpc.mixnet.schema`` and the proof record
(``statement``), never the prover; ``mpc.mixnet.record_verifier`` applies it to a whole run
record.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, NamedTuple

from mpc.mixnet.proofs.shuffle.statement import ShuffleProof, ShuffleStatement
from mpc.mixnet.schema import (
    Ciphertexts,
    VerifyError,
    blob_points,
    blob_scalars,
    scalar_vector,
)
from mpc.ristretto import (
    IDENTITY,
    GroupError,
    L,
    add,
    msm,
    msm_parallel,
    random_scalars,
    smul,
    smul_base,
    sub,
    sum_points,
)


def verifier_op_counts(w: int) -> dict[str, int]:
    """Group operations per ciphertext of the batched shuffle verification."""
    return {"V": 4 + 4 * w, "F": 0, "A": 4 + 4 * w}


class _Decoded(NamedTuple):
    """A parsed proof with its vectors decoded (``c_i``, ``chat_i``, ``that_i``, ``shat_i``,
    ``s'_i``)."""

    p: ShuffleProof
    c: list[bytes]
    chat: list[bytes]
    that: list[bytes]
    shat: list[int]
    sprime: list[int]


def _decode(proof: Any, n: int, w: int, where: str) -> _Decoded:
    p = ShuffleProof.from_wire(proof, n, w, where)
    try:
        pts = [blob_points(getattr(p, k), n, f"{where}.{k}") for k in ("c", "chat", "that")]
        scs = [blob_scalars(getattr(p, k), n, f"{where}.{k}") for k in ("shat", "sprime")]
    except (GroupError, ValueError) as exc:
        raise VerifyError(str(exc)) from None
    return _Decoded(p, *pts, *scs)


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


def _step_terms(st: ShuffleStatement, proof: Any) -> _StepTerms:
    where, pk, inp, out = st.where, st.pk, st.inp, st.out
    n, w = inp.n, inp.w
    if out.n != n or out.w != w:
        raise VerifyError(f"{where}: output has {out.n}x{out.w} ciphertexts, input {n}x{w}")
    if n < 2:
        raise VerifyError(f"{where}: fewer than 2 ciphertexts")
    h, hs = st.gens
    if len(hs) < n:
        raise VerifyError(f"{where}: {len(hs)} generators for {n} ciphertexts")
    hs = hs[:n]
    d = _decode(proof, n, w, where)
    p, cs, chat, that, sp, shat = d.p, d.c, d.chat, d.that, d.sprime, d.shat
    useed = st.useed(p.c)
    u = scalar_vector(useed, n)
    ch = p.challenge(useed)
    prod_u = 1
    for x in u:
        prod_u = prod_u * x % L

    # secret random weights: b1..b4 per global equation, delta_i per chain equation
    b1, b2, b3 = random_scalars(3)
    b4a, b4b = random_scalars(w), random_scalars(w)
    delta = random_scalars(n)
    g_coef = (
        b1 * p.s1
        + b2 * p.s2
        + b3 * p.s3
        + sum(b4b[j] * p.s4[j] for j in range(w))
        + sum(d * s for d, s in zip(delta, shat))
    ) % L
    fixed = (
        [
            (sum(b4a[j] * p.s4[j] for j in range(w)) % L, pk, "pk"),
            (-b1 % L, p.t1, "t1"),
            (-b2 % L, p.t2, "t2"),
            (-b3 % L, p.t3, "t3"),
            ((b2 * ch * prod_u + delta[0] * sp[0]) % L, h, "H"),
        ]
        + [(-b4a[j] % L, p.t4a[j], f"t4a[{j}]") for j in range(w)]
        + [(-b4b[j] % L, p.t4b[j], f"t4b[{j}]") for j in range(w)]
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
        where, own, k_h, k_in, k_out, fixed, g_coef, (pk, inp, out, d, h, hs, u, ch, prod_u)
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
    st = _step_terms(ShuffleStatement(sess, step, batch, pk, inp, out, gens), proof)
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
        _step_terms(
            ShuffleStatement(sess, steps[s], batch, pk, lists[s], lists[s + 1], gens), proofs[s]
        )
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
    d: _Decoded,
    h: bytes,
    hs: list[bytes],
    u: list[int],
    ch: int,
    prod_u: int,
) -> None:
    """Re-check each equation alone (only after a failed batch) and raise naming the first."""
    n, w = inp.n, inp.w
    p, cs, chat, that, sp, shat = d.p, d.c, d.chat, d.that, d.sprime, d.shat
    cbar = sub(sum_points(cs), sum_points(hs))
    if smul_base(p.s1) != add(p.t1, smul(ch, cbar)):
        raise VerifyError(f"{where}: permutation commitments do not sum to sum(H_i) (eq. 1)")
    chat_n = sub(chat[-1], smul(prod_u, h))
    if smul_base(p.s2) != add(p.t2, smul(ch, chat_n)):
        raise VerifyError(f"{where}: chain end is not a commitment to prod(u) (eq. 2)")
    ctil = msm(u, cs)
    if add(smul_base(p.s3), msm(sp, hs)) != add(p.t3, smul(ch, ctil)):
        raise VerifyError(f"{where}: permutation commitment inconsistent with responses (eq. 3)")
    for j in range(w):
        lhs = add(smul(p.s4[j], pk), msm(sp, out.a[j]))
        if lhs != add(p.t4a[j], smul(ch, msm(u, inp.a[j]))):
            raise VerifyError(
                f"{where}: output is not a re-encryption of the input (eq. 4a, component {j})"
            )
        lhs = add(smul_base(p.s4[j]), msm(sp, out.b[j]))
        if lhs != add(p.t4b[j], smul(ch, msm(u, inp.b[j]))):
            raise VerifyError(
                f"{where}: output is not a re-encryption of the input (eq. 4b, component {j})"
            )
    prev = h
    for i in range(n):
        if add(smul_base(shat[i]), smul(sp[i], prev)) != add(that[i], smul(ch, chat[i])):
            raise VerifyError(f"{where}: chain step {i} fails (eq. 5)")
        prev = chat[i]
