"""The catalogue's common protocol base: costs per user and releases at the users received.

Every seed-004 protocol is a :class:`CatalogueProtocol`: besides encoder and analyzer it states

- ``messages_per_user()`` / ``bits_per_user()``: the expected communication of one user (the
  survey's cost metric), derivable without a run (``sdp costs`` reports the measured one);
- ``max_messages()``: per batch, the most messages one user can send, and ``fixed_messages``:
  whether every user sends exactly that many. From the well-formed counts received per batch the
  protocol then *certifies* a number of users: exactly rows/m for fixed-count batches, a lower
  bound ceil(rows/m_max) otherwise (a user who sends more messages cannot be told apart from two
  users). A runtime that knows how many clients took part may pass it as ``counts[USERS_KEY]``;
- ``guarantee(users)``: the (eps, delta) covering the release when ``users`` users contributed
  (raises ``PrivacyRefusal`` when none holds).

``releases`` publishes one release accounted at the planned N when the certified users reach N,
and otherwise re-accounts it at the certified count (``reaccounted=True``): amplification bounds
are recomputed for the smaller crowd, distributed noise is re-analysed with the noise the
received users actually added (never the epsilon planned for N).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protocols.accountant.survey import Bound
from protocols.base import ShuffleProtocol
from protocols.privacy.ledger import USERS, PrivacyRefusal, Release
from protocols.privacy.record import UNSTATED, PrivacyStatement

USERS_KEY = USERS  # the runtime's count of users whose submissions arrived (``counts[USERS]``)


@dataclass(frozen=True)
class Guarantee:
    """The guarantee of one release at a number of users."""

    eps: float
    delta: float
    bound: str  # theorem or analysis used
    kind: str = "upper"  # "upper" or "exact"
    note: str = ""


def certified(b: Bound) -> float:
    """A survey bound's certified value; ValueError carrying the bound's reason when it
    certifies none (the catalogue's ``guarantee`` turns that into a privacy refusal)."""
    if not b.valid or b.value is None:
        raise ValueError(b.reason)
    return float(b.value)


class CatalogueProtocol(ShuffleProtocol):
    """Base of the seed-004 protocols (see the module docstring)."""

    n: int  # planned users N
    fixed_messages: bool = True
    release_what: str = "estimate"

    @abstractmethod
    def messages_per_user(self) -> float:
        """Expected messages one user sends."""

    @abstractmethod
    def bits_per_user(self) -> float:
        """Expected bits one user sends (message payloads only)."""

    @abstractmethod
    def max_messages(self) -> dict[str, int]:
        """Per batch: the most messages one user sends (exact count if ``fixed_messages``)."""

    @abstractmethod
    def guarantee(self, users: int) -> Guarantee:
        """(eps, delta) of the release when ``users`` users contributed."""

    def set_target(self, label: str, n: int, eps_c: float, delta: float) -> None:
        """Check the planned users (an integer >= 2; errors name ``label``) and store n and
        the target (eps_c, delta): the first step of the one-dimensional protocols."""
        if int(n) != n or n < 2:
            raise ValueError(f"{label}: n must be an integer >= 2, got {n}")
        self.n, self.eps_c, self.delta = int(n), float(eps_c), float(delta)

    def mechanism(self) -> str:
        """One line naming the mechanism (for the release record)."""
        return self.name

    def statement(self, extra: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
        """``privacy()`` through the one record: the planned ``(eps_c, delta)`` as the certified
        guarantee and :meth:`mechanism`, unless ``fields`` (``PrivacyStatement`` fields) say
        otherwise, and the protocol's own fields ``extra``."""
        if "certified_epsilon" not in fields:
            fields["certified_epsilon"] = self.eps_c
        if "delta" not in fields:
            fields["delta"] = self.delta
        fields.setdefault("mechanism", self.mechanism())
        return PrivacyStatement(**fields, extra=extra).wire()

    def split_mix_statement(
        self, p: Any, extra: Mapping[str, Any], note: Any = UNSTATED
    ) -> dict[str, Any]:
        """The statement of a robust distributed-noise protocol over split-mix shares (``p``
        holds its ``epsilon``, ``delta_split``, ``gamma``, ``min_users``): pure epsilon for the
        ideal functionality, delta from the split-mix distance, no local guarantee."""
        own = {"gamma": p.gamma, "min_users": p.min_users, **extra}
        return self.statement(
            own, certified_epsilon=p.epsilon, delta=p.delta_split, local_epsilon=None, note=note
        )

    def certified_users(self, counts: dict[str, int]) -> int:
        """Users certified by the well-formed counts (module docstring)."""
        if USERS_KEY in counts:
            return int(counts[USERS_KEY])
        per = []
        for batch, m in self.max_messages().items():
            rows = int(counts.get(batch, 0))
            per.append(rows // m if self.fixed_messages else math.ceil(rows / m))
        return min(per) if per else 0

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        users = self.certified_users(counts)
        if users < 1:
            raise PrivacyRefusal(f"{self.name}: no user's messages received")
        try:
            g = self.guarantee(min(users, self.n))
        except (ValueError, ArithmeticError) as exc:
            raise PrivacyRefusal(f"{self.name}: no guarantee at {users} users: {exc}") from exc
        planned = users >= self.n
        return [
            Release(
                what=self.release_what,
                mechanism=self.mechanism(),
                eps=g.eps,
                delta=g.delta,
                n_accounted=self.n if planned else users,
                n_received=users,
                bound=g.bound,
                kind=g.kind,
                round=round,
                reaccounted=not planned,
                note=g.note,
            )
        ]


class OneReportProtocol(CatalogueProtocol):
    """A catalogue protocol whose every user sends exactly one message, to batch ``reports``."""

    def messages_per_user(self) -> float:
        return 1.0

    def max_messages(self) -> dict[str, int]:
        return {"reports": 1}
