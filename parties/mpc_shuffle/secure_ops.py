"""MPC building blocks over a runtime's ``transfer`` (MPyC's ``Runtime`` or ``LocalRuntime``).

Shamir shares over GF(2^31-1) (``mpc.shamir``), semi-honest honest majority: fresh sharings of
inputs (``share_from``), multiplication with GRR98 degree reduction (``secure_mul``), opening to
the servers with a consistency check (``open_to_servers``), powers of a shared value
(``secure_powers``) and the histogram output mode of the MPC shuffler (``mpc_histogram``: per
component counts via power sums and the Lagrange basis, out-of-domain rows detected by opening
r_i * prod_j (v - j) for ``DOMAIN_CHECK_REPETITIONS`` secret random r_i per shuffled row). The local arithmetic of the
histogram mode (domain polynomial, Lagrange basis, counts from power sums) is
``mpc.histogram_arith``.
"""

from __future__ import annotations

from collections.abc import Sequence
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


async def share_from(
    rt: Any, senders: Sequence[int], value: np.ndarray | None, shape: tuple[int, ...]
) -> np.ndarray:
    """My Shamir share of the sum of the values input by ``senders`` (fresh degree-t sharings)."""
    m, t, me = len(rt.parties), rt.threshold, rt.pid
    outgoing: list[bytes | None] = [None] * m
    if me in senders:
        if value is None or value.shape != shape:
            raise ValueError(f"share_from: sender {me} must input an array of shape {shape}")
        sh = shamir.share(value, m, t)
        outgoing = [shamir.to_wire(sh[r]) for r in range(m)]
    futs = [rt.transfer(outgoing[r], sender_receivers=[(s, r) for s in senders]) for r in range(m)]
    got = await rt.gather(futs[me])
    for r in range(m):
        if r != me:
            await rt.gather(futs[r])
    acc = np.zeros(shape, dtype=np.int64)
    for s, data in zip(senders, got, strict=True):
        acc = (acc + shamir.from_wire(data, shape, f"sharing from server {s}")) % PRIME
    return acc


async def secure_mul(rt: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shares of the elementwise product (local product, then GRR98 degree reduction)."""
    m = len(rt.parties)
    lam = shamir.lagrange_coefficients(range(1, m + 1))[rt.pid]
    d = a * b % PRIME * int(lam) % PRIME
    return await share_from(rt, list(range(m)), d, d.shape)


async def open_to_servers(rt: Any, share_i: np.ndarray) -> np.ndarray:
    """Open a shared array to all servers (checks the m shares are consistent)."""
    got = await rt.gather(rt.transfer(shamir.to_wire(share_i)))
    allsh = np.stack(
        [shamir.from_wire(g, share_i.shape, f"opening from server {j}") for j, g in enumerate(got)]
    )
    if not shamir.consistent(allsh, rt.threshold).all():
        raise MPCServerError("opening: the servers' shares are inconsistent (a deviating server)")
    return shamir.reconstruct(allsh[: rt.threshold + 1], list(range(rt.threshold + 1)))


async def secure_powers(rt: Any, v: np.ndarray, top: int) -> list[np.ndarray]:
    """Shares of v^0 .. v^top (v^0 = 1), in ceil(log2 top) multiplication rounds."""
    p = [np.ones_like(v), v]
    while len(p) - 1 < top:
        h = len(p) - 1
        k = min(h, top - h)
        lo = np.stack(p[1 : k + 1])
        hi = np.broadcast_to(p[h], lo.shape).copy()
        prod = await secure_mul(rt, hi, lo)
        p.extend(prod[i] for i in range(k))
    return p


async def mpc_histogram(
    rt: Any, arrays: dict[str, np.ndarray], bounds: dict[str, int]
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Per batch: shares of counts (width, bound) over the in-domain rows, and the number of
    out-of-domain rows (opened to the servers, positions are of the shuffled order only).
    ``bounds[name]`` is batch ``name``'s domain size: values in ``[0, bound)``."""
    counts, invalid = {}, {}
    t = rt.threshold
    for name in sorted(arrays):
        v, k = arrays[name], int(bounds[name])
        powers = await secure_powers(rt, v, k)
        zv = eval_on_powers(domain_polynomial(k), powers)  # zero exactly on the domain
        # DOMAIN_CHECK_REPETITIONS independent masks per row and component (soundness p^-reps,
        # see mpc.histogram_arith): open y_i = sum_c r_ic z_c per row and repetition i
        reps = (DOMAIN_CHECK_REPETITIONS, *v.shape)
        r = await share_from(
            rt,
            list(range(t + 1)),
            shamir.random_field_elements(reps) if rt.pid <= t else None,
            reps,
        )
        zr = np.broadcast_to(zv, reps).copy()
        masked = (await secure_mul(rt, r, zr)).sum(axis=2) % PRIME  # (reps, n)
        bad = ((await open_to_servers(rt, masked)) != 0).any(axis=0)
        invalid[name] = int(bad.sum())
        good = ~bad
        sums = np.stack([powers[d][good].sum(axis=0) % PRIME for d in range(k)])  # (k, w)
        counts[name] = counts_from_power_sums(sums, k)
    return counts, invalid
