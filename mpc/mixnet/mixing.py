"""A mix server's step (re-encrypt and permute every batch, prove the shuffle) and the check of
another server's step; the input lists come from the accepted client submissions."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

from mpc.mixnet.schema import Ciphertexts, VerifyError, shuffle_generators
from mpc.mixnet.shuffle_verifier import verify_shuffle
from mpc.shuffle_proof import shuffle_and_prove


class ShuffleGenerators:
    """The commitment generators of a run's batches, derived once (every step uses the same)."""

    def __init__(self, sess: bytes) -> None:
        self.sess = sess
        self._cache: dict[tuple[str, int], tuple[bytes, list[bytes]]] = {}

    def __call__(self, batch: str, n: int) -> tuple[bytes, list[bytes]]:
        key = (batch, n)
        if key not in self._cache:
            self._cache[key] = shuffle_generators(self.sess, batch, n)
        return self._cache[key]


def accepted_inputs(
    submissions: list[dict[str, Any]],
    accepted: dict[str, list[int]],
    components: dict[str, int],
) -> dict[str, Ciphertexts]:
    """The first mix's input list of every batch: its accepted submissions in order."""
    out = {}
    for name, comps in components.items():
        cts = [submissions[i]["ct"] for i in accepted[name]]
        out[name] = Ciphertexts(
            [[c["a"][j] for c in cts] for j in range(comps)],
            [[c["b"][j] for c in cts] for j in range(comps)],
        )
    return out


def mix_step(
    sess: bytes,
    me: int,
    pk: bytes,
    current: dict[str, Ciphertexts],
    gens: ShuffleGenerators,
    workers: int = 1,
    pool: Executor | None = None,
) -> dict[str, Any]:
    """Server ``me``'s mix step over every batch: ``{"server", "batches": {name: {output,
    proof}}}`` (a batch of fewer than 2 messages is carried over unchanged, with no proof)."""
    step: dict[str, Any] = {"server": me, "batches": {}}
    for name, ct in current.items():
        if ct.n < 2:  # nothing to unlink; carried over unchanged
            step["batches"][name] = {"output": ct.to_obj(), "proof": None}
            continue
        out, proof = shuffle_and_prove(sess, me, name, pk, ct, gens(name, ct.n), workers, pool)
        step["batches"][name] = {"output": out.to_obj(), "proof": proof}
    return step


def check_step(
    sess: bytes,
    pk: bytes,
    current: dict[str, Ciphertexts],
    step: Any,
    server: int,
    gens: ShuffleGenerators,
    verify: bool = True,
    workers: int = 1,
) -> dict[str, Ciphertexts]:
    """Parse (and verify if ``verify``) server ``server``'s mix step of ``current``; returns its
    output lists; raises ``VerifyError`` naming what is wrong."""
    if (
        not isinstance(step, dict)
        or step.get("server") != server
        or not isinstance(step.get("batches"), dict)
    ):
        raise VerifyError(f"mix[{server}]: malformed mix message")
    out = {}
    for name, ct in current.items():
        b = step["batches"].get(name)
        if b is None:
            raise VerifyError(f"mix[{server}].{name}: batch missing")
        new = Ciphertexts.from_obj(b["output"], f"mix[{server}].{name}.output")
        if ct.n < 2:
            if new.to_obj() != ct.to_obj() or b["proof"] is not None:
                raise VerifyError(
                    f"mix[{server}].{name}: a batch of < 2 messages must be carried over"
                )
        elif verify:
            verify_shuffle(sess, server, name, pk, ct, new, b["proof"], gens(name, ct.n), workers)
        out[name] = new
    return out


def step_outputs(step: dict[str, Any]) -> dict[str, Ciphertexts]:
    """The output lists of a (well-formed) mix step."""
    return {name: Ciphertexts.from_obj(b["output"]) for name, b in step["batches"].items()}
