"""Small helpers shared by several test files (no processes: see conftest.py for ``sdp``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from parties.launcher import free_ports
from parties.runtime import codec
from parties.runtime.cluster import Cluster, PartySpec, dump_cluster, new_session_id
from parties.runtime.frames import VERSION
from parties.runtime.keys import make_party_dirs
from parties.runtime.transport import Node

KS = (3, 2, 4, 2, 3)  # the attribute sizes of ``correlated_records``


def correlated_records(n: int, seed: int = 0) -> np.ndarray:
    """Correlated categorical records over KS (the marginals tests' data)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 2
    c = (a + b + rng.integers(0, 2, n)) % 4
    d = rng.integers(0, 2, n)
    e = (c + d) % 3
    return np.stack([a, b, c, d, e], axis=1)


def multiset_law(real_x: np.ndarray, real_o: np.ndarray, blank: int) -> dict[tuple, float]:
    """Exact law of the sorted multiset of 4 messages: two users' real messages (each uniform
    over the codes ``real_x``, ``real_o``) and one blank message each, uniform over
    ``range(blank)``."""
    grid = np.stack(
        np.meshgrid(real_x, real_o, np.arange(blank), np.arange(blank), indexing="ij"), -1
    )
    grid = grid.reshape(-1, 4)
    grid.sort(axis=1)
    keys, counts = np.unique(grid, axis=0, return_counts=True)
    return {tuple(k): c / grid.shape[0] for k, c in zip(keys.tolist(), counts, strict=True)}


def local_cluster(
    tmp: Path, names: list[str], toml: Path, role: str = "x", **kw: Any
) -> tuple[Cluster, dict[str, Path]]:
    """A trusted-shuffler cluster of ``names`` on free localhost ports (frames up to 1 MiB,
    Cluster options ``kw``), party directories under ``tmp/parties``, written to ``toml``."""
    specs = [PartySpec(n, role, "127.0.0.1", p) for n, p in zip(names, free_ports(len(names)))]
    cluster = Cluster(new_session_id(), "test", "trusted", specs, max_frame=1 << 20, **kw)
    dirs = make_party_dirs(cluster, tmp / "parties")
    toml.parent.mkdir(parents=True, exist_ok=True)
    toml.write_text(dump_cluster(cluster))
    return cluster, dirs


async def started_pair(cluster: Cluster, dirs: dict[str, Path], run: Path) -> tuple[Node, Node]:
    """Parties ``a`` and ``b`` of ``cluster``, started and connected to each other."""
    a = Node(cluster, "a", dirs["a"], run)
    b = Node(cluster, "b", dirs["b"], run)
    await asyncio.gather(a.start({"b"}), b.start({"a"}))
    return a, b


def data_header(**over: Any) -> dict[str, Any]:
    """A data frame's header (session ``s`` * 16, a to b, sequence 1, one chunk of 3 bytes),
    with the fields in ``over`` replaced."""
    h = {
        "v": VERSION,
        "k": "d",
        "sid": b"s" * 16,
        "fr": "a",
        "to": "b",
        "ph": "p",
        "rd": 0,
        "ty": "t",
        "sq": 1,
        "ci": 0,
        "nc": 1,
        "ln": 3,
        "dg": b"d" * 32,
        "pb": False,
    }
    h.update(over)
    return h


async def raw_gram_query(ctx: Any, cts: list[int], nsq: int, rows: int) -> list[int]:
    """Site A's ``gram.enc`` query made of the raw integers ``cts`` (a malicious A's choice of
    ciphertexts mod ``nsq``), and site B's aggregated answers, one integer per ciphertext."""
    w = (int(nsq).bit_length() + 7) // 8
    blob = b"".join(c.to_bytes(w, "little") for c in cts)
    query = {"n": rows, "T": 1, "K": 1, "V": 40, "ct": blob}
    await ctx.send("B", "gram.enc", codec.dumps(query), public=True)
    agg = codec.loads(await ctx.recv("B", "gram.agg"))
    return [int.from_bytes(agg["ct"][k : k + w], "little") for k in range(0, len(agg["ct"]), w)]


def compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every tuple of ``parts`` non-negative integers summing to ``total`` (the histograms of
    ``total`` users over ``parts`` values)."""
    if parts == 1:
        yield (total,)
        return
    for a in range(total + 1):
        for rest in compositions(total - a, parts - 1):
            yield (a, *rest)
