"""Fast Paillier on top of phe's keys and ``EncryptedNumber`` objects (gmpy2 arithmetic).

phe encrypts as (1 + N m) r^N mod N^2 with a fresh full-size exponentiation (about 8 ms at 2048
bits). Here the randomizer r^N is replaced by ``h^e`` with a *fixed public base*
h = r0^N mod N^2 (r0 random, a random N-th residue) and a *short random exponent* e of
``exp_bits`` bits (default 256 = 2 x 128-bit security):

* key owner: h^e is computed mod p^2 and mod q^2 with precomputed fixed-base window tables
  (8-bit windows), then CRT-combined -- a few dozen half-size multiplications;
* anyone else (obfuscation of returned ciphertexts): the same fixed-base tables mod N^2.

**Assumption (documented, not standard DCR alone):** for e uniform in [0, 2^exp_bits),
h^e is computationally indistinguishable from a uniformly random N-th residue (the short-exponent
variant of DCR used by Damgard-Jurik-Nielsen 2010, who take exponents of about |N|/2 bits; pass
``exp_bits=N.bit_length() // 2`` to follow their choice). Under DCR plus this assumption the
scheme stays IND-CPA. Plaintexts are integers in Z_N: use ``mpc.fixed_point`` to encode reals
(never phe's public-exponent encoding, which leaks magnitudes).

Every ciphertext that leaves its party must be fresh or re-randomized: fresh encryptions are,
homomorphic results must go through ``obfuscate`` / ``PublicFixedBase.rerandomize``.
"""

from __future__ import annotations

import multiprocessing
import secrets
from concurrent.futures import ProcessPoolExecutor

import gmpy2
from phe import paillier

WINDOW = 8
_POOL_KEY = None  # the FastPaillier a forked encryption worker uses


def _encrypt_chunk(ms: list[int]) -> list[gmpy2.mpz]:
    """Worker: encrypt a chunk with the key inherited through fork (fresh OS randomness)."""
    return [_POOL_KEY.encrypt_int(m) for m in ms]


class _FixedBase:
    """Fixed-base exponentiation table for ``base`` modulo ``mod`` with 8-bit windows."""

    def __init__(self, base: int, mod: int, exp_bits: int) -> None:
        self.mod = gmpy2.mpz(mod)
        self.exp_bits = exp_bits
        self.nwin = (exp_bits + WINDOW - 1) // WINDOW
        b = gmpy2.mpz(base) % self.mod
        self.table: list[list[gmpy2.mpz]] = []
        for _ in range(self.nwin):
            row = [gmpy2.mpz(1)]
            for _ in range(1, 1 << WINDOW):
                row.append(gmpy2.f_mod(row[-1] * b, self.mod))
            self.table.append(row)
            b = gmpy2.f_mod(row[-1] * b, self.mod)  # base^(2^(8(k+1)))

    def pow_bytes(self, e: bytes) -> gmpy2.mpz:
        """base^e for e given as little-endian bytes (len == nwin)."""
        mod = self.mod
        acc = gmpy2.mpz(1)
        for row, digit in zip(self.table, e):
            if digit:
                acc = gmpy2.f_mod(acc * row[digit], mod)
        return acc


class PublicFixedBase:
    """What a non-owner needs to re-randomize: N, N^2 and the public base h = r0^N mod N^2."""

    def __init__(self, public_key: paillier.PaillierPublicKey, h: int, exp_bits: int = 256) -> None:
        self.public_key = public_key
        self.n = gmpy2.mpz(public_key.n)
        self.nsq = gmpy2.mpz(public_key.nsquare)
        self.h = int(h)
        self.exp_bits = exp_bits
        self._fb = _FixedBase(h, self.nsq, exp_bits)

    def random_rn(self) -> gmpy2.mpz:
        """A fresh randomizer h^e mod N^2."""
        return self._fb.pow_bytes(secrets.token_bytes(self._fb.nwin))

    def rerandomize(self, c: int) -> gmpy2.mpz:
        """c * h^e mod N^2 (same plaintext, fresh-looking ciphertext)."""
        return gmpy2.f_mod(gmpy2.mpz(c) * self.random_rn(), self.nsq)

    def encrypt_int(self, m: int) -> gmpy2.mpz:
        """Encryption by a non-owner: (1 + N m) h^e mod N^2."""
        g_m = gmpy2.f_mod(1 + self.n * (gmpy2.mpz(m) % self.n), self.nsq)
        return gmpy2.f_mod(g_m * self.random_rn(), self.nsq)

    def to_dict(self) -> dict:
        """Serializable public parameters."""
        return {"n": int(self.n), "h": self.h, "exp_bits": self.exp_bits}

    @classmethod
    def from_dict(cls, d: dict) -> PublicFixedBase:
        """Inverse of ``to_dict`` (validates the fields)."""
        try:
            n, h, bits = int(d["n"]), int(d["h"]), int(d["exp_bits"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                "PublicFixedBase.from_dict: need integer fields n, h, exp_bits"
            ) from None
        if n < 3 or not 0 < h < n * n or not 64 <= bits <= 4096:
            raise ValueError("PublicFixedBase.from_dict: parameters out of range")
        return cls(paillier.PaillierPublicKey(n), h, bits)


class FastPaillier:
    """Key owner's fast encryption (CRT + fixed-base short exponent) around a phe key pair."""

    def __init__(
        self,
        public_key: paillier.PaillierPublicKey,
        private_key: paillier.PaillierPrivateKey,
        exp_bits: int = 256,
    ) -> None:
        if exp_bits < 128:
            raise ValueError(f"FastPaillier: exp_bits={exp_bits} too short (need >= 128)")
        self.public_key = public_key
        self.private_key = private_key
        self.n = gmpy2.mpz(public_key.n)
        self.nsq = gmpy2.mpz(public_key.nsquare)
        p, q = gmpy2.mpz(private_key.p), gmpy2.mpz(private_key.q)
        self.psq, self.qsq = p * p, q * q
        self.qsq_inv = gmpy2.invert(self.qsq, self.psq)
        r0 = gmpy2.mpz(secrets.randbelow(int(self.n) - 2) + 2)
        h = gmpy2.powmod(r0, self.n, self.nsq)
        self.exp_bits = exp_bits
        self.public = PublicFixedBase(public_key, int(h), exp_bits)
        self._fp = _FixedBase(h, self.psq, exp_bits)
        self._fq = _FixedBase(h, self.qsq, exp_bits)
        self._nbytes = self._fp.nwin

    @classmethod
    def generate(cls, bits: int = 2048, exp_bits: int = 256) -> FastPaillier:
        """A fresh phe key pair of ``bits`` bits with the fast-encryption tables."""
        if bits < 256:
            raise ValueError(f"FastPaillier.generate: key of {bits} bits is too small")
        pub, priv = paillier.generate_paillier_keypair(n_length=bits)
        return cls(pub, priv, exp_bits)

    def _rn(self) -> gmpy2.mpz:
        e = secrets.token_bytes(self._nbytes)
        a = self._fp.pow_bytes(e)
        b = self._fq.pow_bytes(e)
        # Garner CRT: x = b + q^2 ((a - b) q^-2 mod p^2)
        return b + self.qsq * gmpy2.f_mod((a - b) * self.qsq_inv, self.psq)

    def encrypt_int(self, m: int) -> gmpy2.mpz:
        """Raw ciphertext of integer m (taken mod N), fresh randomness."""
        g_m = 1 + self.n * (gmpy2.mpz(m) % self.n)  # < N^2 since m < N
        return gmpy2.f_mod(g_m * self._rn(), self.nsq)

    def encrypt_ints(self, ms: list[int], workers: int = 1) -> list[gmpy2.mpz]:
        """Raw ciphertexts of many integers; ``workers > 1`` forks a process pool (POSIX)."""
        if workers <= 1 or len(ms) < 4 * workers * 64:
            return [self.encrypt_int(m) for m in ms]
        global _POOL_KEY
        _POOL_KEY = self
        chunks = [ms[k : k + 1024] for k in range(0, len(ms), 1024)]
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
            parts = list(ex.map(_encrypt_chunk, chunks))
        _POOL_KEY = None
        return [c for part in parts for c in part]

    def encrypt(self, m: int) -> paillier.EncryptedNumber:
        """A phe ``EncryptedNumber`` (exponent 0, i.e. an integer plaintext)."""
        return paillier.EncryptedNumber(self.public_key, int(self.encrypt_int(m)), 0)

    def decrypt_int(self, c: int) -> int:
        """Plaintext in [0, N) of a raw ciphertext (phe's CRT decryption)."""
        c = int(c)
        if not 0 < c < int(self.nsq):
            raise ValueError("FastPaillier.decrypt_int: ciphertext out of range")
        return int(self.private_key.raw_decrypt(c))

    def decrypt_signed(self, c: int) -> int:
        """Centred plaintext in (-N/2, N/2]."""
        v = self.decrypt_int(c)
        return v - int(self.n) if v > int(self.n) // 2 else v


def obfuscate(
    enc: paillier.EncryptedNumber, public: PublicFixedBase | None = None
) -> paillier.EncryptedNumber:
    """Re-randomize a phe ciphertext before it leaves the party (fixed-base if available)."""
    if public is None:
        enc.obfuscate()
        return enc
    c = public.rerandomize(enc.ciphertext(be_secure=False))
    return paillier.EncryptedNumber(enc.public_key, int(c), enc.exponent)


def ciphertexts_to_bytes(cs: list[int], nsq: int) -> bytes:
    """Fixed-width little-endian serialization of raw ciphertexts."""
    w = (int(nsq).bit_length() + 7) // 8
    return b"".join(int(c).to_bytes(w, "little") for c in cs)


def ciphertexts_from_bytes(data: bytes, nsq: int) -> list[gmpy2.mpz]:
    """Inverse of ``ciphertexts_to_bytes`` with range checks."""
    w = (int(nsq).bit_length() + 7) // 8
    if len(data) % w:
        raise ValueError(f"ciphertext blob of {len(data)} bytes is not a multiple of {w}")
    out = []
    for k in range(0, len(data), w):
        c = gmpy2.mpz(int.from_bytes(data[k : k + w], "little"))
        if not 0 < c < nsq:
            raise ValueError(f"ciphertext {k // w} out of range")
        out.append(c)
    return out
