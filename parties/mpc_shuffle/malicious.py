"""The malicious-abort layer of the MPC shuffler (honest majority, t < m/2), over a runtime's
``transfer`` (MPyC's ``Runtime`` or ``LocalRuntime``). The arithmetic is ``mpc.mac_check``.

Steps a server runs in mode ``malicious-abort`` (``parties.mpc_shuffle.shuffler.server_run``):

1. ``check_inputs``: after every submission arrived, each accepted client's sharing is tested
   for degree <= t from the openings the client signed (``mpc.input_commit``) and each
   server's own shares; the servers exchange signed reports and the verdict
   (``parties.verify.mpc_inputs.judge``) names a client whose signed data prove it deviated
   (refused, its rows counted as rejected) or a server that lied (the run aborts).
2. MAC keys (secret, drawn with the input check's coins) and ``tag_batches``: the tags
   alpha_j x of every value (their GRR98 terms added up in the shuffle's first round); the
   caller shuffles value and tags in the same rows (``mac_check.stack_tags``).
3. ``verify_shuffle``: after the shuffle, new joint coins; the MAC check (and, asked for, the
   multiset check) is opened (only its check values: 0 when honest). Any non-zero value raises
   ``MaliciousAbort`` naming the check and the batch: nothing else is opened or sent.

``CheckLog`` keeps this server's shares of every opened check value and coin, which go into
its signed transcript (the public meta of its output), so ``sdp verify`` reconstructs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc import mac_check as mc
from mpc import shamir
from mpc.shamir import PRIME
from parties.mpc_shuffle import input_evidence as ie
from parties.mpc_shuffle.mpyc_runtime import MPCServerError
from parties.mpc_shuffle.secure_ops import grr_coefficient, secure_mul, share_from


class MaliciousAbort(MPCServerError):
    """A malicious-abort check failed: the run stops and nothing is opened (message names it)."""


@dataclass
class CheckLog:
    """This server's shares of the opened coins and check values (public, for ``sdp verify``)."""

    coins: dict[str, list[int]] = field(default_factory=dict)
    inputs: list[int] = field(default_factory=list)
    input_clients: list[str] = field(default_factory=list)
    mac: dict[str, list[int]] = field(default_factory=dict)
    multiset: dict[str, list[int]] = field(default_factory=dict)

    def as_meta(self) -> dict[str, Any]:
        return {
            "coins": self.coins,
            "inputs": self.inputs,
            "input_clients": self.input_clients,
            "mac": self.mac,
            "multiset": self.multiset,
        }


async def open_all(rt: Any, share_i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Open to all servers: (values, mask of the elements whose m shares are consistent)."""
    got = await rt.gather(rt.transfer(shamir.to_wire(share_i)))
    allsh = np.stack(
        [shamir.from_wire(g, share_i.shape, f"opening from server {j}") for j, g in enumerate(got)]
    )
    ok = shamir.consistent(allsh, rt.threshold)
    vals = shamir.reconstruct(allsh[: rt.threshold + 1], list(range(rt.threshold + 1)))
    return vals, ok


async def joint_coin_seed(
    rt: Any, label: bytes, log: CheckLog, name: str, secret: int = 0
) -> tuple[bytes, np.ndarray]:
    """A seed no coalition of t servers can predict or bias: the sum of random sharings input
    by every server, opened (consistency checked) after they are all fixed. Also returns
    this server's shares of ``secret`` more such random values, drawn in the same round and
    never opened (masks)."""
    m = len(rt.parties)
    shape = (mc.COIN_ELEMENTS + secret,)
    drawn = await share_from(rt, list(range(m)), shamir.random_field_elements(shape), shape)
    mine = drawn[: mc.COIN_ELEMENTS]
    vals, ok = await open_all(rt, mine)
    if not ok.all():
        raise MaliciousAbort(f"coin opening {name!r}: the servers' shares are inconsistent")
    log.coins[name] = mine.tolist()
    return mc.coin_seed(vals, label + b"|" + name.encode()), drawn[mc.COIN_ELEMENTS :]


async def check_inputs(
    rt: Any,
    ctx: Any,
    cfg: Any,
    blocks: dict[str, list[ie.Block]],
    clients: Sequence[str],
    log: CheckLog,
) -> tuple[list[tuple[str, str]], np.ndarray, dict[str, Any] | None]:
    """(The clients among ``clients``, in order, convicted by the signed input evidence, with
    why; this server's shares of the ``MAC_KEYS`` secret uniform MAC keys, drawn in the round
    of the check's coins; the signed reports when a client was convicted, else None).

    ``blocks``: this server's shares and evidence per client and block. Raises ``InputAbort``
    (``input_evidence``) naming a server the evidence convicts (``parties.verify.mpc_inputs``)."""
    keys = mc.MAC_KEYS
    seed, secret = await joint_coin_seed(rt, cfg.label, log, "inputs", keys)
    if not clients:
        return [], secret[:keys], None
    verdicts, reports = await ie.exchange_reports(rt, ctx, cfg, blocks, clients)
    evidence = {"reports": reports}
    culprit = next((v for v in verdicts if v[0] == "server"), None)
    if culprit is not None:
        raise ie.InputAbort(
            f"MPC abort: input check: {culprit[2]} (signed evidence); nothing is opened",
            str(culprit[1]),
            evidence,
        )
    convicted = [(str(c), why) for kind, c, why in verdicts if kind == "client"]
    log.inputs = ie.combined_openings(seed, blocks, clients, cfg.servers.index(ctx.name))
    log.input_clients = list(clients)
    return convicted, secret[:keys], (evidence if convicted else None)


async def tag_batches(
    rt: Any, alpha: np.ndarray, arrays: dict[str, np.ndarray], first: Sequence[int]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """The tags alpha_j x of every value, ``{name: (K, n, w)}``, in two parts that the first
    round of permute-and-reshare (coalition ``first``) adds up, so the tag multiplication
    needs no resharing of its own: with the GRR98 coefficients lambda_i over all m servers,
    alpha_j x = sum_i lambda_i alpha_j,i x_i (local products of the servers' shares).

    Returns (this server's Shamir shares of Z = the sum of the terms of the servers OUTSIDE
    ``first``, which they share as in GRR98; and, for a member of ``first``, its own term,
    an additive share over ``first`` that it adds in that round, ``reshare_exchange.
    mpyc_permute_reshare(addend=...)``; None for the others). The members reshare their terms
    with fresh randomness, as GRR98 does; an error a server adds to a term is an additive
    error on the tag, which the MAC check catches."""
    names = sorted(arrays)
    k = alpha.shape[0]
    flat = np.concatenate([arrays[n].reshape(-1) for n in names]) if names else np.zeros(0)
    # the GRR coefficient folded into the K keys: one local product per tag
    scaled = shamir.mul_mod(alpha, grr_coefficient(rt)).reshape(k, 1)
    local = shamir.mul_mod(np.asarray(flat, dtype=np.int64).reshape(1, -1), scaled)
    outside = [i for i in range(len(rt.parties)) if i not in first]
    shared = await share_from(rt, outside, local if rt.pid in outside else None, local.shape)

    def per_batch(a: np.ndarray) -> dict[str, np.ndarray]:
        out, off = {}, 0
        for n in names:
            size = arrays[n].size
            out[n] = a[:, off : off + size].reshape(k, *arrays[n].shape)
            off += size
        return out

    return per_batch(shared), (per_batch(local) if rt.pid in first else None)


async def _product_tree(
    rt: Any, factors: np.ndarray, extra: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Shares of the product of each row of ``factors`` (rows, L), in ceil(log2 L) rounds, and
    of the elementwise product of the ``extra`` pair, computed in the first of those rounds."""
    cur = factors
    if cur.shape[1] < 2:  # no round of the tree to share
        return (cur[:, 0] if cur.shape[1] else np.ones(cur.shape[0], dtype=np.int64)), (
            await secure_mul(rt, *extra)
        )
    done = None
    while cur.shape[1] > 1:
        if cur.shape[1] % 2:
            cur = np.concatenate([cur, np.ones((cur.shape[0], 1), dtype=np.int64)], axis=1)
        h = cur.shape[1] // 2
        if done is None:  # the first round also multiplies the extra pair
            a, b = cur[:, :h], cur[:, h:]
            prod = await secure_mul(
                rt,
                np.concatenate([a.ravel(), extra[0].ravel()]),
                np.concatenate([b.ravel(), extra[1].ravel()]),
            )
            cur, done = prod[: a.size].reshape(a.shape), prod[a.size :].reshape(extra[0].shape)
        else:
            cur = await secure_mul(rt, cur[:, :h], cur[:, h:])
    return cur[:, 0], done


async def verify_shuffle(
    rt: Any,
    alpha: np.ndarray,
    before: dict[str, np.ndarray],
    after: dict[str, np.ndarray],
    tags: dict[str, np.ndarray],
    label: bytes,
    log: CheckLog,
    multiset: bool = False,
) -> None:
    """MAC check (and with ``multiset`` the multiset check) on the shuffled batches;
    MaliciousAbort names a failure. The MAC check alone catches any deviation of a minority
    in this linear protocol, a non-permutation included (an additive error on values and
    tags that is alpha-consistent with probability 1/p per key).

    ``before``/``after``: this server's shares of the batches before and after the shuffle;
    ``tags``: its shares of the shuffled tags (K, n, w). Coins are drawn here, after the
    outputs are fixed."""
    names = sorted(after)
    reps = mc.MULTISET_REPETITIONS if multiset else 0
    seed, rho = await joint_coin_seed(rt, label, log, "checks", len(names) * reps)
    k = alpha.shape[0]
    # MAC check: c_j = sum r [alpha_j y] - [alpha_j] sum r [y], per batch and key
    s_val = np.zeros((len(names), k), dtype=np.int64)
    s_tag = np.zeros((len(names), k), dtype=np.int64)
    for b, n in enumerate(names):
        r = mc.coins(seed, f"mac|{n}", (k, *after[n].shape))
        s_val[b], s_tag[b] = mc.mac_check_sums(after[n], tags[n], r)
    # multiset check: rho (prod (z - d(x_i)) - prod (z - d(y_i))) per batch and repetition,
    # with the secret random rho a factor of both products (no round of its own)
    factors, lengths = [], []
    for n in names:
        w = after[n].shape[1]
        for rep in range(reps):
            beta = mc.coins(seed, f"multiset-beta|{n}|{rep}", (w,))
            z = int(mc.coins(seed, f"multiset-z|{n}|{rep}", (1,))[0])
            for rows in (before[n], after[n]):
                factors.append((z - mc.row_digests(rows, beta)) % PRIME)
                lengths.append(rows.shape[0] + 1)
    padded = np.ones((len(factors), max(lengths, default=1)), dtype=np.int64)  # 1: padding
    for i, f in enumerate(factors):
        padded[i, : f.size] = f
        padded[i, f.size] = rho[i // 2]
    # ... whose tree's first round also computes the MAC check's [alpha_j] sum r [y]
    mac_pair = (s_val, np.broadcast_to(alpha, s_val.shape))
    prods, prod = await _product_tree(rt, padded, mac_pair)
    mac_share = (s_tag - prod) % PRIME
    prods = prods.reshape(len(names), reps, 2)
    ms_share = (prods[:, :, 0] - prods[:, :, 1]) % PRIME
    opened, ok = await open_all(rt, np.concatenate([mac_share, ms_share], axis=1))
    for b, n in enumerate(names):
        log.mac[n] = mac_share[b].tolist()
        if reps:
            log.multiset[n] = ms_share[b].tolist()
    failed = []
    for b, n in enumerate(names):
        if not ok[b, :k].all() or (opened[b, :k] != 0).any():
            failed.append(f"MAC check on batch {n!r}")
        if not ok[b, k:].all() or (opened[b, k:] != 0).any():
            failed.append(f"multiset check on batch {n!r}")
    if failed:
        raise MaliciousAbort(
            "MPC abort: " + "; ".join(failed) + " failed (a server deviated in the shuffle or "
            "in a tag multiplication); nothing is opened"
        )


async def check_tagged(
    rt: Any, alpha: np.ndarray, items: list[np.ndarray], label: bytes, log: CheckLog, name: str
) -> None:
    """MAC check of products computed after the shuffle (histogram counting): ``items`` are
    tagged arrays (1 + K, ...), value then tags; coins are drawn here, after they are fixed.
    MaliciousAbort names ``name`` if a value or tag was changed."""
    seed, _ = await joint_coin_seed(rt, label, log, f"counting {name}")
    k = alpha.shape[0]
    s_val = np.zeros(k, dtype=np.int64)
    s_tag = np.zeros(k, dtype=np.int64)
    for i, item in enumerate(items):
        r = mc.coins(seed, f"count|{name}|{i}", (k, *item.shape[1:]))
        v, tg = mc.mac_check_sums(item[0], item[1:], r)
        s_val, s_tag = (s_val + v) % PRIME, (s_tag + tg) % PRIME
    share_c = (s_tag - await secure_mul(rt, s_val, alpha.copy())) % PRIME
    opened, ok = await open_all(rt, share_c)
    log.mac[f"counting {name}"] = share_c.tolist()
    if not ok.all() or (opened != 0).any():
        raise MaliciousAbort(
            f"MPC abort: MAC check of the histogram counting on batch {name!r} failed (a server "
            "deviated in a multiplication); nothing is opened"
        )
