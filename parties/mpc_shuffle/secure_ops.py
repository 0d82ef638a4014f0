"""MPC building blocks over a runtime's ``transfer`` (MPyC's ``Runtime`` or ``LocalRuntime``).

Shamir shares over GF(2^31-1) (``mpc.shamir``), honest majority: fresh sharings of
inputs (``share_from``), multiplication with GRR98 degree reduction (``secure_mul``), opening to
the servers with a consistency check (``open_to_servers``), powers of a shared value
(``secure_powers``) and the histogram output mode of the MPC shuffler (``mpc_histogram``: per
component counts via power sums and the Lagrange basis, out-of-domain rows detected by opening
r_i * prod_j (v - j) for ``DOMAIN_CHECK_REPETITIONS`` secret random r_i per shuffled row). The local arithmetic of the
histogram mode (domain polynomial, Lagrange basis, counts from power sums) is
``mpc.histogram_arith``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from mpc import shamir
from mpc.histogram_arith import (
    DOMAIN_CHECK_REPETITIONS,
    counts_from_power_sums,
    domain_polynomial,
    eval_on_powers,
)
from mpc.shamir import PRIME
from parties.mpc_shuffle.mpyc_runtime import MPCServerError


async def exchange(rt: Any, outgoing: list[bytes | None], senders: list[int]) -> list[Any]:
    """Every sender s sends ``outgoing[r]`` (its own) to every server r; returns what this
    server got, in the order of ``senders``. A sender's part for itself stays local (not
    pickled and unpickled by MPyC's transfer)."""
    m, me = len(rt.parties), rt.pid
    futs = [
        rt.transfer(
            outgoing[r] if r != me else None,
            sender_receivers=[(s, r) for s in senders if s != r],
        )
        for r in range(m)
    ]
    got = list(await rt.gather(futs[me]))
    for r in range(m):
        if r != me:
            await rt.gather(futs[r])  # sends to r complete on our side (empty result)
    if me in senders:
        got.insert(senders.index(me), outgoing[me])
    return got


async def share_from(
    rt: Any, senders: Sequence[int], value: np.ndarray | None, shape: tuple[int, ...]
) -> np.ndarray:
    """My Shamir share of the sum of the values input by ``senders`` (fresh degree-t sharings)."""
    m, t, me = len(rt.parties), rt.threshold, rt.pid
    outgoing: list[bytes | None] = [None] * m
    if me in senders:
        if value is None or value.shape != shape:
            raise ValueError(f"share_from: sender {me} must input an array of shape {shape}")
        outgoing = list(shamir.share_wire(value, m, t))
    got = await exchange(rt, outgoing, list(senders))
    return shamir.sum_wire(
        [(f"sharing from server {s}", data) for s, data in zip(senders, got, strict=True)], shape
    )


def grr_coefficient(rt: Any) -> int:
    """This server's GRR98 recombination coefficient: the degree-2t product of two sharings
    is sum_i lambda_i a_i b_i over all m servers (t < m/2)."""
    return int(shamir.lagrange_coefficients(range(1, len(rt.parties) + 1))[rt.pid])


async def secure_mul(rt: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shares of the elementwise product (local product, then GRR98 degree reduction)."""
    d = shamir.mul_mod(shamir.mul_mod(a, b), grr_coefficient(rt))
    return await share_from(rt, list(range(len(rt.parties))), d, d.shape)


async def open_to_servers(rt: Any, share_i: np.ndarray) -> np.ndarray:
    """Open a shared array to all servers (checks the m shares are consistent)."""
    got = await rt.gather(rt.transfer(shamir.to_wire(share_i)))
    allsh = np.stack(
        [shamir.from_wire(g, share_i.shape, f"opening from server {j}") for j, g in enumerate(got)]
    )
    if not shamir.consistent(allsh, rt.threshold).all():
        raise MPCServerError("opening: the servers' shares are inconsistent (a deviating server)")
    return shamir.reconstruct(allsh[: rt.threshold + 1], list(range(rt.threshold + 1)))


async def secure_powers(
    rt: Any, v: np.ndarray, top: int, one: np.ndarray | None = None
) -> list[np.ndarray]:
    """Shares of v^0 .. v^top (v^0 = 1), in ceil(log2 top) multiplication rounds.

    Tagged form (malicious-abort, ``parties.mpc_shuffle.malicious``): ``v`` is (1 + K, ...),
    the value then its K MAC tags, and ``one`` the same form of the constant 1 (1, alpha_1..K);
    every product then carries its tags: [p_h p_j] and [alpha p_h p_j] = [alpha p_h] [p_j]."""
    p = [np.ones_like(v) if one is None else one, v]
    while len(p) - 1 < top:
        h = len(p) - 1
        k = min(h, top - h)
        lo = np.stack(p[1 : k + 1])
        hi = np.broadcast_to(p[h], lo.shape).copy()
        if one is not None:  # multiply value and tags of p_h by the value of p_j
            lo = np.broadcast_to(lo[:, :1], lo.shape).copy()
        prod = await secure_mul(rt, hi, lo)
        p.extend(prod[i] for i in range(k))
    return p


Check = Callable[[str, list[np.ndarray]], Awaitable[None]]


async def mpc_domain_check(
    rt: Any,
    arrays: dict[str, np.ndarray],
    bounds: dict[str, int],
    *,
    alpha: np.ndarray | None = None,
    tags: dict[str, np.ndarray] | None = None,
    check: Check | None = None,
) -> dict[str, tuple[np.ndarray, list[np.ndarray]]]:
    """Per batch: (which shuffled rows are out of the domain [0, bound), opened to the servers
    and nothing else about the rows; this server's shares of the powers v^0 .. v^bound).

    Malicious-abort: with the MAC keys ``alpha`` (K,), the batches' ``tags`` (K, n, w) and
    ``check(name, items)`` (the MAC check of batch ``name``'s tagged arrays, raising on
    failure), every product (powers, masks, masked domain values) carries its tags and
    ``check`` runs on all of them before the masked domain values are opened."""
    out = {}
    t = rt.threshold
    for name in sorted(arrays):
        v, k = arrays[name], int(bounds[name])
        one = None
        if alpha is not None and tags is not None:  # tagged form: (1 + K, n, w)
            v = np.concatenate([v[None], tags[name]])
            one = np.concatenate(
                [
                    np.ones_like(v[:1]),
                    np.broadcast_to(alpha.reshape(-1, *([1] * (v.ndim - 1))), v[1:].shape),
                ]
            )
        powers = await secure_powers(rt, v, k, one)
        zv = eval_on_powers(domain_polynomial(k), powers)  # zero exactly on the domain
        # DOMAIN_CHECK_REPETITIONS independent masks per row and component (soundness p^-reps,
        # see mpc.histogram_arith): open y_i = sum_c r_ic z_c per row and repetition i
        vshape = v.shape if one is None else v.shape[1:]
        reps = (DOMAIN_CHECK_REPETITIONS, *vshape)
        r = await share_from(
            rt,
            list(range(t + 1)),
            shamir.random_field_elements(reps) if rt.pid <= t else None,
            reps,
        )
        if one is None:
            zr = np.broadcast_to(zv, reps).copy()
            masked_rows = await secure_mul(rt, r, zr)
            checked: list[np.ndarray] = []
        else:  # tag the masks, then [r z] and [alpha r z] = [alpha r] [z]
            tr = np.broadcast_to(r, (one.shape[0], *reps))
            r_t = await secure_mul(rt, np.broadcast_to(one[:, None], tr.shape).copy(), tr.copy())
            zr = np.broadcast_to(zv[:, None], r_t.shape)
            prod = await secure_mul(rt, r_t, np.broadcast_to(zr[:1], r_t.shape).copy())
            checked = [*powers[2:], r_t, prod]
            masked_rows = prod[0]
        if check is not None and checked:
            await check(name, checked)
        masked = masked_rows.sum(axis=2) % PRIME  # (reps, n)
        bad = ((await open_to_servers(rt, masked)) != 0).any(axis=0)
        out[name] = (bad, powers if one is None else [q[0] for q in powers])
    return out


async def mpc_histogram(
    rt: Any,
    arrays: dict[str, np.ndarray],
    bounds: dict[str, int],
    *,
    alpha: np.ndarray | None = None,
    tags: dict[str, np.ndarray] | None = None,
    check: Check | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Per batch: shares of counts (width, bound) over the in-domain rows, and the number of
    out-of-domain rows (``mpc_domain_check``, same keyword arguments)."""
    counts, invalid = {}, {}
    checked = await mpc_domain_check(rt, arrays, bounds, alpha=alpha, tags=tags, check=check)
    for name, (bad, pw) in checked.items():
        k = int(bounds[name])
        invalid[name] = int(bad.sum())
        good = ~bad
        sums = np.stack([pw[d][good].sum(axis=0) % PRIME for d in range(k)])  # (k, w)
        counts[name] = counts_from_power_sums(sums, k)
    return counts, invalid
