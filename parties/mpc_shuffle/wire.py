"""Configuration and wire format of the MPC secret-shared shuffler (``parties.mpc_shuffle.shuffler``).

Holds ``MPCShufflerConfig`` (who is who, threshold, output mode, timeout), the message types and
constants (``SENTINEL``: what a client shares for an out-of-domain value), the batch-spec checks,
the client-side Shamir sharing of message batches (``share_batches``) and the CBOR framing of
share arrays: ``send_chunked``/``recv_chunked`` split them row-wise into frames of at most
``CHUNK_ELEMENTS`` field elements (the transport caps frame size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mpc import shamir
from mpc.mac_check import SECURITY_MODES
from mpc.shamir import PRIME
from parties.runtime import codec
from parties.runtime.link import PartyContext
from protocols.base import Batches, BatchSpec

MSG_SHARES = "mpc-shares"
MSG_OUTPUT = "mpc-output"
MODES = ("open", "histogram")
CHUNK_ELEMENTS = 1 << 21  # field elements per frame: 8 MiB of shares, under the frame cap
SENTINEL = PRIME - 1  # what a client shares for an out-of-domain value (always invalid)


@dataclass(frozen=True)
class MPCShufflerConfig:
    """Who is who in an MPC shuffle run (server i is MPyC party i)."""

    servers: tuple[str, ...]
    analyzer: str
    clients: tuple[str, ...]
    threshold: int = 1
    mode: str = "open"
    security: str = "malicious-abort"  # or "semi-honest" (faster, no checks)
    multiset: bool = False  # malicious-abort: the multiset check behind the MAC check too
    timeout: float = 120.0
    max_domain: int = 64
    run_label: bytes = field(default=b"sdp-mpc")
    round: int = 0  # protocol round (multi-round protocols run one shuffle per round)

    def __post_init__(self) -> None:
        m, t = len(self.servers), self.threshold
        if m < 3 or not (0 < t and 2 * t < m):
            raise ValueError(f"MPC shuffler: need m >= 3 servers and 0 < t < m/2, got m={m}, t={t}")
        if self.mode not in MODES:
            raise ValueError(f"MPC shuffler: mode must be one of {MODES}, got {self.mode!r}")
        if self.security not in SECURITY_MODES:
            raise ValueError(
                f"MPC shuffler: security must be one of {SECURITY_MODES}, got {self.security!r}"
            )
        if len(set(self.servers)) != m:
            raise ValueError(f"MPC shuffler: duplicate server names in {self.servers}")

    @property
    def m(self) -> int:
        return len(self.servers)

    def for_round(self, rnd: int) -> MPCShufflerConfig:
        """The same run's configuration for protocol round ``rnd``."""
        return replace(self, round=int(rnd))

    @property
    def label(self) -> bytes:
        """Domain-separation label of this run and round (seeds, permutations)."""
        return self.run_label + b"|round" + str(self.round).encode()


def domain_refusal(spec: BatchSpec, mode: str, security: str, max_domain: int) -> str | None:
    """Why the MPC shuffler refuses a batch of this bound in this mode (None: accepted).

    The domain check on shares (``secure_ops.mpc_domain_check``) costs a multiplication per
    domain value, so it runs for bounds up to ``max_domain`` only. Mode ``histogram`` needs it
    for the counts, so a larger bound is refused there. In mode ``open`` a larger bound is
    accepted: in ``malicious-abort`` its values are opened only after the shuffle's MAC check
    has passed (``malicious.verify_shuffle``), so a server's offset or row substitution aborts
    the run before any opening, and an out-of-domain value that is opened can only be a
    client's own submission, which the analyzer counts as invalid (docs/security.md)."""
    if spec.bound <= max_domain or mode != "histogram":
        return None
    return (
        f"histogram mode: batch {spec.name!r} has bound {spec.bound} > max_domain "
        f"{max_domain}; use mode 'open'"
    )


def _check_specs(
    specs: Sequence[BatchSpec], cfg: MPCShufflerConfig | None = None
) -> dict[str, BatchSpec]:
    out = {s.name: s for s in specs}
    for s in specs:
        if not (1 <= s.bound <= SENTINEL):
            raise ValueError(f"batch {s.name!r}: bound {s.bound} does not fit GF(2^31-1)")
        why = None if cfg is None else domain_refusal(s, cfg.mode, cfg.security, cfg.max_domain)
        if why is not None:
            raise ValueError(why)
    return out


# ---------------------------------------------------------------------------------------------
# Client-side sharing and the framing of share arrays.


def share_batches(
    batches: Batches, specs: Sequence[BatchSpec], m: int, t: int
) -> list[dict[str, np.ndarray]]:
    """Shamir-share every message; returns one ``{batch: (n, width) shares}`` dict per server.

    A component outside ``[0, bound)`` is shared as ``SENTINEL`` so the run counts it as
    invalid instead of failing. Wrong batch names or widths raise ValueError.
    """
    sp = _check_specs(specs)
    per_server: list[dict[str, np.ndarray]] = [{} for _ in range(m)]
    for name, arr in batches.items():
        if name not in sp:
            raise ValueError(f"share_batches: unknown batch {name!r}; expected {sorted(sp)}")
        a = np.asarray(arr)
        if a.ndim != 2 or a.shape[1] != sp[name].width or a.dtype.kind not in "iu":
            raise ValueError(
                f"share_batches: batch {name!r} must be integer (n, "
                f"{sp[name].width}), got {a.dtype} {a.shape}"
            )
        a = a.astype(np.int64)
        a = np.where((a < 0) | (a >= sp[name].bound), SENTINEL, a)
        sh = shamir.share(a, m, t)
        for i in range(m):
            per_server[i][name] = sh[i]
    return per_server


def _pack(arrays: dict[str, np.ndarray], extra: dict[str, Any] | None = None) -> bytes:
    obj: dict[str, Any] = {
        "batches": {
            k: {"shape": list(v.shape), "data": shamir.to_wire(v)} for k, v in arrays.items()
        }
    }
    obj.update(extra or {})
    return codec.dumps(obj)


def _unpack(payload: bytes, where: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    obj = codec.loads(payload)
    if not isinstance(obj, dict) or not isinstance(obj.get("batches"), dict):
        raise ValueError(f"{where}: payload must be a map with a 'batches' map")
    out = {}
    for k, v in obj["batches"].items():
        if not isinstance(v, dict) or set(v) != {"shape", "data"}:
            raise ValueError(f"{where}: batch {k!r} must have keys shape, data")
        shape = v["shape"]
        if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
            raise ValueError(f"{where}: batch {k!r} has bad shape {shape!r}")
        out[k] = shamir.from_wire(v["data"], tuple(shape), f"{where} batch {k!r}")
    return out, obj


def _chunks(arrays: dict[str, np.ndarray], max_elements: int) -> list[dict[str, np.ndarray]]:
    """Split row-wise so that every piece holds at most ``max_elements`` field elements."""
    pieces: list[dict[str, np.ndarray]] = []
    for k in sorted(arrays):
        a = arrays[k]
        rows = max(1, max_elements // max(1, int(np.prod(a.shape[1:]))))
        for start in range(0, a.shape[0], rows):
            pieces.append({k: a[start : start + rows]})
        if a.shape[0] == 0:
            pieces.append({k: a})
    return pieces or [{}]


async def send_chunked(
    ctx: PartyContext,
    peer: str,
    msg_type: str,
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    *,
    last: bool = True,
    max_elements: int | None = None,
    public: bool = False,
) -> int:
    """Send share arrays in frames of at most ``max_elements`` elements (the transport caps
    frame size); ``meta`` and ``last`` ride on the final piece. ``public=True`` records the
    payloads in full in the sender's signed transcript. Returns bytes sent."""
    pieces = _chunks(arrays, max_elements or CHUNK_ELEMENTS)
    sent = 0
    for i, piece in enumerate(pieces):
        final = i == len(pieces) - 1
        payload = _pack(piece, {**meta, "last": bool(last)} if final else {"last": False})
        sent += len(payload)
        await ctx.send(peer, msg_type, payload, public=public)
    return sent


async def recv_blocks(
    ctx: PartyContext, peer: str, msg_type: str, where: str
) -> list[tuple[dict[str, np.ndarray], dict[str, Any]]]:
    """Receive a client's submission block by block: a block ends with a piece whose meta has
    ``evidence`` (``input_evidence.send_shares``) or that is ``last``. Returns, per block, its
    concatenated arrays and its final piece's meta (the submission ends with ``last``)."""
    out: list[tuple[dict[str, np.ndarray], dict[str, Any]]] = []
    pieces: list[dict[str, np.ndarray]] = []
    while True:
        arrays, meta = _unpack(await ctx.recv(peer, msg_type), where)
        pieces.append(arrays)
        final = meta.get("last", True) is not False
        if "evidence" in meta or final:
            out.append((_concat(pieces, where), meta))
            pieces = []
        if final:
            return out


def _concat(blocks: list[dict[str, np.ndarray]], where: str) -> dict[str, np.ndarray]:
    out = {}
    for k in sorted({k for b in blocks for k in b}):
        parts = [b[k] for b in blocks if k in b]
        if len({p.shape[1:] for p in parts}) != 1:
            raise ValueError(f"{where}: pieces of batch {k!r} have different shapes")
        out[k] = np.concatenate(parts)
    return out


async def recv_chunked(
    ctx: PartyContext, peer: str, msg_type: str, where: str
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Receive pieces until one has ``last``; returns concatenated arrays and its meta."""
    blocks, meta = [], {}
    while True:
        arrays, meta = _unpack(await ctx.recv(peer, msg_type), where)
        blocks.append(arrays)
        if meta.get("last", True) is not False:
            break
    return _concat(blocks, where), meta
