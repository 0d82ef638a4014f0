"""The MPC shuffler's security modes: the steps of a server's round that differ between them.

``security_mode(cfg)`` picks the mode once from the run parameters (``security``):
``SemiHonest`` (no checks, faster) or ``MaliciousAbort`` (the default: client sharings checked
against their signed commitments and for degree <= t, three MAC tags per value through the
shuffle, the MAC check, and the multiset check with ``mpc_multiset``, before anything is
opened; ``parties.mpc_shuffle.malicious``). ``parties.mpc_shuffle.shuffler.server_run`` calls
the same methods whatever the mode; a mode object lives for one round (it holds that round's
MAC key shares, tags and check log).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from mpc import mac_check
from mpc import permute_reshare as pr
from parties.mpc_shuffle import input_evidence as ie
from parties.mpc_shuffle import malicious as mal
from parties.mpc_shuffle.mpyc_runtime import guarded

Arrays = dict[str, np.ndarray]  # batch name -> this server's shares
Reshare = Callable[..., Awaitable[Arrays]]  # permute-and-reshare (values, addend=None)


class SecurityMode(ABC):
    """The steps of a server's round that depend on the security mode."""

    checks_domain_on_shares: bool  # mode ``open``: out-of-domain rows found before opening

    @abstractmethod
    def accept_block(self, ctx: Any, cfg: Any, client: str, b: int, last: bool, part: Any) -> None:
        """Check a received block of a client's shares (``ValueError``: malformed)."""

    @abstractmethod
    async def check_inputs(
        self, rt: Any, ctx: Any, cfg: Any, blocks: dict[str, list[ie.Block]], accepted: list[str]
    ) -> list[str]:
        """The accepted clients convicted of an inconsistent sharing (then left out)."""

    @abstractmethod
    async def shuffle(self, rt: Any, cfg: Any, arrays: Arrays, reshare: Reshare) -> Arrays:
        """This server's shares of the shuffled batches; ``reshare(values, addend=None)`` is
        the round's permute-and-reshare (``reshare_exchange.mpyc_permute_reshare``)."""

    @abstractmethod
    def output_kwargs(self, rt: Any, cfg: Any, names: Sequence[str]) -> dict[str, Any]:
        """Extra arguments of the output computations (domain check, histogram) of ``names``."""

    @abstractmethod
    def publish(self, extra: dict[str, Any]) -> None:
        """Add what the server's output entry publishes about the checks to ``extra``."""


class SemiHonest(SecurityMode):
    """No checks: a deviating server can change the output without detection."""

    checks_domain_on_shares = False  # mode ``open``: out-of-domain rows are counted when opened

    def accept_block(self, ctx: Any, cfg: Any, client: str, b: int, last: bool, part: Any) -> None:
        """A received block of a client's shares is taken as it is."""

    async def check_inputs(
        self, rt: Any, ctx: Any, cfg: Any, blocks: dict[str, list[ie.Block]], accepted: list[str]
    ) -> list[str]:
        """The clients convicted of an inconsistent sharing: none are looked for."""
        return []

    async def shuffle(self, rt: Any, cfg: Any, arrays: Arrays, reshare: Reshare) -> Arrays:
        """Permute-and-reshare the values alone."""
        return await reshare(arrays)

    def output_kwargs(self, rt: Any, cfg: Any, names: Sequence[str]) -> dict[str, Any]:
        """Extra arguments of the output computations (domain check, histogram): none."""
        return {}

    def publish(self, extra: dict[str, Any]) -> None:
        """What the server's output entry adds about the checks: nothing."""


class MaliciousAbort(SecurityMode):
    """Secure with abort against a malicious minority (t < m/2): any deviation aborts the run,
    naming the check, before anything is opened."""

    checks_domain_on_shares = True  # mode ``open``: bounds up to max_domain, never opened

    def __init__(self) -> None:
        self.log = mal.CheckLog()
        self.alpha: np.ndarray | None = None
        self.tags: dict[str, np.ndarray] = {}
        self.convicted: list[tuple[str, str]] = []
        self.evidence: dict[str, Any] | None = None

    def accept_block(self, ctx: Any, cfg: Any, client: str, b: int, last: bool, part: Any) -> None:
        """A block whose shares do not match the commitment its client signed is malformed."""
        ie.accept_block(ctx, cfg, client, b, last, part)

    async def check_inputs(
        self, rt: Any, ctx: Any, cfg: Any, blocks: dict[str, list[ie.Block]], accepted: list[str]
    ) -> list[str]:
        """A client's sharing must have degree <= t before it is used; the signed evidence
        names who deviated (the client, or a server: then the run aborts)."""
        try:
            self.convicted, self.alpha, self.evidence = await guarded(
                rt,
                cfg,
                "input check",
                mal.check_inputs(rt, ctx, cfg, blocks, accepted, self.log),
            )
        except ie.InputAbort as exc:
            await ie.announce_abort(ctx, cfg, exc)
            raise
        for c, why in self.convicted:
            logging.warning("MPC server %s: refusing %s: %s", ctx.name, c, why)
        return [c for c, _ in self.convicted]

    async def shuffle(self, rt: Any, cfg: Any, arrays: Arrays, reshare: Reshare) -> Arrays:
        """Value and tags travel in the same rows through the shuffle; the MAC check (and the
        multiset check) runs on the result before anything is opened."""
        names = sorted(arrays)
        alpha = self.alpha
        first = pr.coalitions(cfg.m, cfg.threshold)[0]  # the first resharing round's coalition
        tags, own = await guarded(rt, cfg, "MAC tags", mal.tag_batches(rt, alpha, arrays, first))
        stacked = {k: mac_check.stack_tags(arrays[k], tags[k]) for k in names}
        addend = None  # a first-round member's own GRR98 terms of the tags
        if own is not None:
            addend = {k: mac_check.stack_tags(None, own[k]) for k in names}
        out = await reshare(stacked, addend=addend)
        split = {k: mac_check.split_tags(out[k], arrays[k].shape[1]) for k in names}
        shuffled = {k: v for k, (v, _) in split.items()}
        self.tags = {k: t for k, (_, t) in split.items()}
        check = mal.verify_shuffle(
            rt, alpha, arrays, shuffled, self.tags, cfg.label, self.log, cfg.multiset
        )
        await guarded(rt, cfg, "MAC check", check)
        return shuffled

    def output_kwargs(self, rt: Any, cfg: Any, names: Sequence[str]) -> dict[str, Any]:
        """The products after the shuffle carry tags, MAC-checked before any opening."""
        return {
            "alpha": self.alpha,
            "check": lambda name, items: mal.check_tagged(
                rt, self.alpha, items, cfg.label, self.log, name
            ),
            "tags": {k: self.tags[k] for k in names},
        }

    def publish(self, extra: dict[str, Any]) -> None:
        """This server's shares of the opened coins and check values (public), the clients
        refused on signed evidence and why, and the evidence."""
        extra["checks"] = self.log.as_meta()
        extra["input_faults"] = dict(self.convicted)
        extra["input_evidence"] = self.evidence or {}


MODES: dict[str, type[SecurityMode]] = {
    "semi-honest": SemiHonest,
    "malicious-abort": MaliciousAbort,
}


def security_mode(cfg: Any) -> SecurityMode:
    """A fresh mode object for one round of ``cfg.security``."""
    try:
        return MODES[cfg.security]()
    except KeyError:
        raise ValueError(
            f"MPC shuffler: security must be one of {sorted(MODES)}, got {cfg.security!r}"
        ) from None
