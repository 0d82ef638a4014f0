"""The ristretto255 prime-order group through libsodium (via ``rbcl``'s bundled library).

Elements are their canonical 32-byte encodings (``bytes``); scalars are Python ints mod ``L``.
Every libsodium call's return code is checked: decoding an invalid encoding is an error.
rbcl's Python wrappers ignore some return codes, hence the direct ``ctypes`` calls below.
rbcl bundles libsodium 1.0.18, whose ristretto255 decoder ignores the top bit of byte 31
(non-canonical per RFC 9496); ``is_valid``/``check_point``/``high_bit_free`` reject such
encodings explicitly, and every received element passes through one of them.

Cost model (what the benchmark counts): ``V`` variable-base scalar multiplication, ``F``
fixed-base multiplication by the libsodium base point ``G`` (precomputed table inside
libsodium), ``A`` one addition/subtraction (two decodes, one encode). ``OPS`` counts them;
``M`` counts terms of a native multi-scalar multiplication (below).

Backends. Where every scalar is public (verification), ``msm``/``msm_parallel`` run on the
native extension ``mpc._ristretto`` (variable-time Straus/Pippenger written from RFC 9496,
docs/native.md) when it was built; otherwise, or with ``SDP_GROUP_BACKEND=libsodium``, on
libsodium. ``backend_line()`` says which. Secret-scalar operations (``smul``, ``smul_many``,
``smul_base``) use libsodium's constant-time code; the prover's batched secret-scalar work
(``msm_secret``, ``smul_fixed_many``) uses the extension's constant-time paths when built
(masked table lookups, no scalar-dependent branch or address), else libsodium
(docs/security.md).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

from rbcl.rbcl import _sodium

from mpc.ct_scalar import L, ct_muladd, ct_reduce, ct_scalar_bytes  # noqa: F401 (re-exported)
from mpc.pools import process_pool

IDENTITY = bytes(32)

_smul = _sodium.crypto_scalarmult_ristretto255
_smul_base = _sodium.crypto_scalarmult_ristretto255_base
_add = _sodium.crypto_core_ristretto255_add
_sub = _sodium.crypto_core_ristretto255_sub
_valid = _sodium.crypto_core_ristretto255_is_valid_point
_from_hash = _sodium.crypto_core_ristretto255_from_hash
_buf = ctypes.create_string_buffer

# Operation counters (V: variable-base mult, F: fixed-base mult, A: addition, M: terms of a
# native public-scalar MSM, S: terms of a native constant-time MSM, C: native constant-time
# fixed-base multiplications).
OPS = {"V": 0, "F": 0, "A": 0, "M": 0, "S": 0, "C": 0}


def _load_native() -> tuple[object | None, str]:
    forced = os.environ.get("SDP_GROUP_BACKEND", "")
    if forced not in ("", "native", "libsodium"):
        raise ImportError(f"SDP_GROUP_BACKEND={forced!r}: expected 'native' or 'libsodium'")
    if forced == "libsodium":
        return None, "forced by SDP_GROUP_BACKEND=libsodium"
    try:
        from mpc import _ristretto
    except ImportError as exc:
        if forced == "native":
            raise ImportError(
                f"SDP_GROUP_BACKEND=native but the extension is missing: {exc}"
            ) from None
        return None, f"native extension not built: {exc}"
    return _ristretto, ""


_native, _native_why = _load_native()


def backend() -> str:
    """``"native MSM"`` or ``"libsodium (REASON)"``: which code runs public-scalar MSMs."""
    return "native MSM" if _native is not None else f"libsodium ({_native_why})"


def backend_line() -> str:
    """One line for ``sdp run`` / ``sdp verify`` saying which group backend ran."""
    return f"group backend: {backend()}"


def set_backend(name: str) -> str:
    """Switch this process to ``"native"`` or ``"libsodium"`` (tests); returns the previous one.

    Sets ``SDP_GROUP_BACKEND`` too, so worker processes started later follow.
    """
    global _native, _native_why
    prev = "native" if _native is not None else "libsodium"
    os.environ["SDP_GROUP_BACKEND"] = name
    _native, _native_why = _load_native()
    return prev


def reset_ops() -> dict[str, int]:
    """Return the operation counters and reset them to zero."""
    out = dict(OPS)
    for k in OPS:
        OPS[k] = 0
    return out


class GroupError(ValueError):
    """An invalid or non-canonical group element, or a degenerate operation."""


def _sb(s: int) -> bytes:
    return ct_scalar_bytes(s)


def scalar_bytes(s: int) -> bytes:
    """Canonical 32-byte little-endian encoding of a scalar mod L."""
    return _sb(s)


def scalar_from_bytes(data: bytes, where: str = "scalar") -> int:
    """Decode a canonical scalar (32 bytes, value < L); raises ValueError otherwise."""
    if not isinstance(data, bytes) or len(data) != 32:
        raise ValueError(f"{where}: scalar must be 32 bytes")
    v = int.from_bytes(data, "little")
    if v >= L:
        raise ValueError(f"{where}: non-canonical scalar (>= group order)")
    return v


def random_scalar() -> int:
    """Uniform scalar in [1, L) from the OS CSPRNG."""
    while True:
        s = int.from_bytes(ct_reduce(os.urandom(64)), "little")
        if s:
            return s


def random_scalars(n: int) -> list[int]:
    """``n`` uniform nonzero scalars."""
    raw = os.urandom(64 * n)
    out = [int.from_bytes(ct_reduce(raw[64 * i : 64 * i + 64]), "little") for i in range(n)]
    return [s if s else random_scalar() for s in out]


def seeded_scalars(seed: bytes, label: bytes, n: int) -> list[int]:
    """``n`` secret scalars expanded from a 32-byte secret ``seed`` (SHAKE-256 of ``label`` and
    ``seed``, 64 bytes per scalar reduced mod L: bias below 2^-259). Lets each chunk of a
    parallel prover draw its own randomness from one fresh ``os.urandom(32)`` seed; a zero
    (probability n * 2^-252) is kept, not redrawn, so the expansion stays deterministic."""
    if len(seed) != 32:
        raise ValueError(f"seeded_scalars: seed of {len(seed)} bytes, need 32")
    raw = hashlib.shake_256(b"sdp-seeded-scalars|" + label + b"|" + seed).digest(64 * n)
    fb = int.from_bytes
    return [fb(ct_reduce(raw[i : i + 64]), "little") for i in range(0, 64 * n, 64)]


def is_valid(p: bytes) -> bool:
    """True iff ``p`` is the canonical encoding of a group element (identity included)."""
    return isinstance(p, bytes) and len(p) == 32 and p[31] < 0x80 and _valid(p) == 1


def high_bit_free(blob: bytes) -> bool:
    """True iff no 32-byte encoding in ``blob`` has the (always zero) top bit set."""
    return max(blob[31::32], default=0) < 0x80


def check_point(p: object, where: str, allow_identity: bool = False) -> bytes:
    """Validate one received element; raises ``GroupError`` naming ``where``."""
    if not isinstance(p, bytes) or len(p) != 32:
        raise GroupError(f"{where}: group element must be 32 bytes")
    if p[31] >= 0x80 or _valid(p) != 1:
        raise GroupError(f"{where}: invalid or non-canonical ristretto255 encoding")
    if not allow_identity and p == IDENTITY:
        raise GroupError(f"{where}: identity element not allowed")
    return p


def check_points(ps: Sequence[bytes], where: str) -> list[int]:
    """Indices of invalid elements (bad encoding or identity) in ``ps``."""
    bad = []
    for i, p in enumerate(ps):
        if len(p) != 32 or p[31] >= 0x80 or p == IDENTITY or _valid(p) != 1:
            bad.append(i)
    return bad


def split_points(blob: bytes, n: int, where: str) -> list[bytes]:
    """Split a concatenation of ``n`` 32-byte encodings (length checked, not validity)."""
    if not isinstance(blob, bytes) or len(blob) != 32 * n:
        raise ValueError(f"{where}: expected {n} elements ({32 * n} bytes)")
    if not high_bit_free(blob):
        raise GroupError(f"{where}: non-canonical encoding (top bit set)")
    return [blob[32 * i : 32 * i + 32] for i in range(n)]


def smul(s: int, p: bytes, where: str = "smul") -> bytes:
    """``s * p``; raises GroupError if ``p`` is invalid or the result is the identity."""
    q = _buf(32)
    OPS["V"] += 1
    if _smul(q, _sb(s), p) != 0:
        raise GroupError(f"{where}: invalid element or zero product")
    return q.raw


def smul_base(s: int) -> bytes:
    """``s * G`` with libsodium's fixed-base table; the identity for s = 0 mod L."""
    q = _buf(32)
    OPS["F"] += 1
    if _smul_base(q, _sb(s)) != 0:  # libsodium refuses a zero scalar
        return IDENTITY
    return q.raw


def _add_or_sub(op: Callable[..., int], p: bytes, q: bytes, where: str) -> bytes:
    """libsodium's ``op`` (point addition or subtraction), counted as one addition."""
    r = _buf(32)
    OPS["A"] += 1
    if op(r, p, q) != 0:
        raise GroupError(f"{where}: invalid element")
    return r.raw


def add(p: bytes, q: bytes, where: str = "add") -> bytes:
    """``p + q``; raises GroupError on an invalid operand."""
    return _add_or_sub(_add, p, q, where)


def sub(p: bytes, q: bytes, where: str = "sub") -> bytes:
    """``p - q``; raises GroupError on an invalid operand."""
    return _add_or_sub(_sub, p, q, where)


def neg(p: bytes) -> bytes:
    """``-p``."""
    return sub(IDENTITY, p, "neg")


def smul_many(scalars: Sequence[int], points: Sequence[bytes], where: str = "smul") -> list[bytes]:
    """Elementwise ``scalars[i] * points[i]``; errors name the failing index."""
    if len(scalars) != len(points):
        raise ValueError(f"{where}: {len(scalars)} scalars for {len(points)} elements")
    f, q, out = _smul, _buf(32), []  # one reused output buffer; .raw copies
    append = out.append
    for i, (s, p) in enumerate(zip(scalars, points)):
        if f(q, _sb(s), p) != 0:
            raise GroupError(f"{where}[{i}]: invalid element or zero product")
        append(q.raw)
    OPS["V"] += len(out)
    return out


def smul_base_many(scalars: Iterable[int]) -> list[bytes]:
    """``[s * G for s in scalars]`` (scalars must be nonzero mod L)."""
    f, q, out = _smul_base, _buf(32), []
    append = out.append
    for s in scalars:
        if f(q, _sb(s)) != 0:
            raise GroupError("smul_base: zero scalar")
        append(q.raw)
    OPS["F"] += len(out)
    return out


def _binop_many(f, ps: Sequence[bytes], qs: Sequence[bytes], where: str) -> list[bytes]:  # noqa: ANN001
    if len(ps) != len(qs):
        raise ValueError(f"{where}: length mismatch {len(ps)} vs {len(qs)}")
    r, out = _buf(32), []
    append = out.append
    for i, (p, q) in enumerate(zip(ps, qs)):
        if f(r, p, q) != 0:
            raise GroupError(f"{where}[{i}]: invalid element")
        append(r.raw)
    OPS["A"] += len(out)
    return out


def add_many(ps: Sequence[bytes], qs: Sequence[bytes], where: str = "add") -> list[bytes]:
    """Elementwise ``ps[i] + qs[i]``."""
    return _binop_many(_add, ps, qs, where)


def sub_many(ps: Sequence[bytes], qs: Sequence[bytes], where: str = "sub") -> list[bytes]:
    """Elementwise ``ps[i] - qs[i]``."""
    return _binop_many(_sub, ps, qs, where)


def sum_points(ps: Iterable[bytes], where: str = "sum") -> bytes:
    """Sum of elements (the identity for an empty input)."""
    f = _add
    acc = _buf(IDENTITY, 32)
    n = 0
    for i, p in enumerate(ps):
        if f(acc, acc, p) != 0:
            raise GroupError(f"{where}[{i}]: invalid element")
        n += 1
    OPS["A"] += n
    return acc.raw


def msm_secret(scalars: Sequence[int], points: Sequence[bytes], where: str = "msm") -> bytes:
    """``sum(scalars[i] * points[i])`` for SECRET scalars and public points (the prover).

    Native: constant-time Straus (``ct_msm``: every window adds a masked-selected multiple);
    libsodium: one constant-time multiplication and one addition per term, where a zero
    product is an error. Invalid or identity points raise GroupError naming ``where[i]``.
    """
    if len(scalars) != len(points):
        raise ValueError(f"{where}: {len(scalars)} scalars for {len(points)} elements")
    if _native is not None:
        OPS["S"] += len(points)
        blob = b"".join(map(_sb, scalars))
        return _native.ct_msm(blob, decode_points(points, where))
    fm, fa = _smul, _add
    acc = _buf(IDENTITY, 32)
    q = _buf(32)
    for i, (s, p) in enumerate(zip(scalars, points)):
        if fm(q, _sb(s), p) != 0:
            raise GroupError(f"{where}[{i}]: invalid element or zero product")
        fa(acc, acc, q)
    OPS["V"] += len(points)
    OPS["A"] += len(points)
    return acc.raw


@functools.lru_cache(maxsize=32)
def _ct_table(base: bytes) -> bytes:
    try:
        return _native.ct_table(base)
    except ValueError:
        raise GroupError("fixed base: invalid or identity element") from None


def smul_fixed_many(
    terms: Sequence[tuple[Sequence[int], bytes]],
    addends: Sequence[bytes] | None = None,
    where: str = "fixed",
) -> list[bytes]:
    """``[sum_k s_k[i] * B_k (+ addends[i])]`` for ``terms = [(s_k, B_k)]``: SECRET scalars,
    public bases used for many scalars (ElGamal's ``G`` and ``pk``, Pedersen's ``H``).

    Native: a table of 512 multiples per base, built once per process, and constant-time
    lookups (``ct_mul``); libsodium: its base-point table for ``G`` and a variable-base
    multiplication otherwise, plus additions (each multiplication rejects a zero product).
    """
    n = len(terms[0][0])
    if any(len(s) != n for s, _ in terms) or (addends is not None and len(addends) != n):
        raise ValueError(f"{where}: length mismatch")
    if _native is None:
        out: list[bytes] | None = None
        for sc, base in terms:
            part = smul_base_many(sc) if base == G else smul_many(sc, [base] * n, where)
            out = part if out is None else add_many(out, part, where)
        assert out is not None
        return out if addends is None else add_many(addends, out, where)
    tables = tuple(_ct_table(b) for _, b in terms)
    blobs = tuple(b"".join(map(_sb, sc)) for sc, _ in terms)
    add = None if addends is None else decode_points(addends, where, allow_identity=True)
    OPS["C"] += n * len(terms)
    out_blob = _native.ct_mul(tables, blobs, add)
    return [out_blob[32 * i : 32 * i + 32] for i in range(n)]


def _scalar_blob(scalars: Sequence[int], where: str) -> bytes:
    out = [(s % L).to_bytes(32, "little") for s in scalars]
    if bytes(32) in out:  # libsodium's rule: a zero product is an error
        raise GroupError(f"{where}[{out.index(bytes(32))}]: invalid element or zero product")
    return b"".join(out)


def decode_points(
    points: Sequence[bytes], where: str = "points", allow_identity: bool = False
) -> bytes:
    """The native internal form of ``points`` (decoded once, reusable across MSMs).

    Raises GroupError naming the first element that is not 32 bytes, not a canonical
    encoding, or (unless ``allow_identity``) the identity (as libsodium's ``msm`` does).
    """
    if _native is None:
        raise RuntimeError(f"decode_points needs the native extension ({_native_why})")
    blob = b"".join(points)
    if len(blob) != 32 * len(points):
        bad = next(i for i, p in enumerate(points) if len(p) != 32)
        raise GroupError(f"{where}[{bad}]: invalid element or zero product")
    table = _native.decode(blob, allow_identity)
    if isinstance(table, int):
        raise GroupError(f"{where}[{table}]: invalid element or zero product")
    return table


def msm(scalars: Sequence[int], points: Sequence[bytes], where: str = "msm") -> bytes:
    """``sum(scalars[i] * points[i])`` for PUBLIC scalars (verification).

    Native backend: one variable-time Straus/Pippenger MSM (docs/native.md); libsodium:
    one multiplication and one addition per term (``msm_secret``). Either way an invalid or
    identity base, or a zero scalar, raises GroupError naming ``where[i]``.
    """
    if _native is None:
        return msm_secret(scalars, points, where)
    if len(scalars) != len(points):
        raise ValueError(f"{where}: {len(scalars)} scalars for {len(points)} elements")
    OPS["M"] += len(points)
    return _native.msm(_scalar_blob(scalars, where), decode_points(points, where))


def msm_chunk(items: list[tuple[list[int], list[bytes], str]]) -> bytes:
    """Sum of multi-exponentiations (one worker's share of the terms); natively one MSM."""
    if _native is None:
        return sum_points(msm(k, pts, where) for k, pts, where in items)
    for k, pts, where in items:
        if len(k) != len(pts):
            raise ValueError(f"{where}: {len(k)} scalars for {len(pts)} elements")
    scal = b"".join(_scalar_blob(k, where) for k, pts, where in items)
    table = b"".join(decode_points(pts, where) for k, pts, where in items)
    OPS["M"] += len(scal) // 32
    return _native.msm(scal, table)


def msm_parallel(
    terms: list[tuple[list[int], list[bytes], str]],
    workers: int,
    pool: Executor | None,
    tick: Callable[[float], None] | None = None,
) -> bytes:
    """``sum_t sum_i k_t[i] P_t[i]`` with every term list split across ``workers`` processes.

    With the native extension the chunks run in ``workers`` threads of this process instead
    (its MSM releases the GIL), so no point or scalar is pickled; ``pool`` is then unused.
    ``tick(fraction)`` (optional) is called as chunks complete (for progress displays).
    """
    own: Executor | None = None
    if _native is not None and workers > 1:
        pool = own = ThreadPoolExecutor(workers)
    elif pool is None and workers > 1:
        pool = own = process_pool(workers)
    try:
        nchunks = (workers if pool is not None else 1) * (8 if tick else 1)
        jobs: list[list[tuple[list[int], list[bytes], str]]] = [[] for _ in range(nchunks)]
        for k, pts, where in terms:
            step = -(-len(pts) // nchunks) or 1
            for c, s0 in enumerate(range(0, len(pts), step)):
                jobs[c].append((k[s0 : s0 + step], pts[s0 : s0 + step], where))
        parts = []
        it = map(msm_chunk, jobs) if pool is None or nchunks == 1 else pool.map(msm_chunk, jobs)
        for i, part in enumerate(it, 1):
            parts.append(part)
            if tick:
                tick(i / nchunks)
        return sum_points(parts)
    finally:
        if own is not None:
            own.shutdown()


def map_chunks(fn, argsets: list[tuple], pool) -> list:  # noqa: ANN001
    """``[fn(*a) for a in argsets]``, in ``pool`` (an Executor) when given."""
    if pool is None or len(argsets) <= 1:
        return [fn(*a) for a in argsets]
    return list(pool.map(fn, *zip(*argsets)))


def chunk_ranges(n: int, k: int) -> list[tuple[int, int]]:
    """``k`` (at most ``n``) contiguous index ranges covering ``0..n``."""
    k = max(1, min(k, n))
    step = -(-n // k) if n else 1
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def hash_to_point(*parts: bytes) -> bytes:
    """Hash to the group (Elligator 2 twice, as in RFC 9496); nobody knows its discrete log."""
    h = hashlib.sha512()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    r = _buf(32)
    _from_hash(r, h.digest())
    return r.raw


def generators(domain: bytes, n: int) -> list[bytes]:
    """``n`` independent generators derived from ``domain`` by hashing into the group."""
    seed = hashlib.sha512(b"ristretto255-generators|" + domain).digest()
    r = _buf(32)
    out = []
    for i in range(n):
        _from_hash(r, hashlib.sha512(seed + i.to_bytes(8, "little")).digest())
        out.append(r.raw)
    return out


G = smul_base(1)  # the libsodium base point, generator of ElGamal and commitments
