"""A mix server's step (re-encrypt and permute every batch, prove the shuffle) and the check of
the other servers' steps; the input lists come from the accepted client submissions.

A server parses every step as it arrives (``check_step`` with ``verify=False``) and verifies
the steps it has not verified yet with ``settle_steps`` before it builds on them (its own turn)
and before it releases anything computed from the final lists (decryption shares, plaintexts):
one batched equation over the chain (``verify_mix_chain``, as the public verifier), falling back
to step-by-step checks only when that equation fails, so a bad step is skipped and the next
step is checked against the last valid list.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

from mpc.mixnet.proofs.shuffle.prover import shuffle_and_prove
from mpc.mixnet.proofs.shuffle.verifier import verify_mix_chain, verify_shuffle
from mpc.mixnet.schema import Ciphertexts, VerifyError, shuffle_generators


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
    pool: Executor | None = None,
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
            verify_shuffle(
                sess, server, name, pk, ct, new, b["proof"], gens(name, ct.n), workers, pool
            )
        out[name] = new
    return out


def step_outputs(step: dict[str, Any]) -> dict[str, Ciphertexts]:
    """The output lists of a (well-formed) mix step."""
    return {name: Ciphertexts.from_obj(b["output"]) for name, b in step["batches"].items()}


def settle_steps(
    sess: bytes,
    pk: bytes,
    current: dict[str, Ciphertexts],
    pending: list[tuple[int, dict[str, Any]]],
    gens: ShuffleGenerators,
    workers: int = 1,
    pool: Executor | None = None,
) -> tuple[dict[str, Ciphertexts], list[tuple[int, dict[str, Any]]], list[tuple[int, str]]]:
    """Verify the parsed steps ``pending`` (``(server, step)`` in mixing order) on top of the
    verified lists ``current``; returns the last valid lists, the accepted steps and the rejected
    ``(server, reason)``.

    Every step is verified: first all of them in one batched chain equation per batch (the
    honest case); if that fails, one by one, each against the last accepted list (a rejected
    step is skipped, as if its server had not mixed).
    """
    if not pending:
        return current, [], []
    try:
        outs = [step_outputs(step) for _, step in pending]
        for name, ct in current.items():
            if ct.n < 2:
                for (server, step), out in zip(pending, outs):
                    b = step["batches"][name]
                    if out[name].to_obj() != ct.to_obj() or b["proof"] is not None:
                        raise VerifyError(f"mix[{server}].{name}: must be carried over")
                continue
            verify_mix_chain(
                sess,
                name,
                pk,
                [ct] + [o[name] for o in outs],
                [server for server, _ in pending],
                [step["batches"][name]["proof"] for _, step in pending],
                gens(name, ct.n),
                workers,
                pool,
            )
        return outs[-1], list(pending), []
    except (VerifyError, ValueError, KeyError, TypeError):
        pass  # some step is bad: find which, step by step
    accepted: list[tuple[int, dict[str, Any]]] = []
    rejected: list[tuple[int, str]] = []
    for server, step in pending:
        try:
            current = check_step(sess, pk, current, step, server, gens, True, workers, pool)
            accepted.append((server, step))
        except (VerifyError, ValueError) as exc:
            rejected.append((server, str(exc)))
    return current, accepted, rejected
