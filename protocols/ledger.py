"""The privacy ledger: every release a run publishes, the count it was accounted at, and the gate.

A *release* is one thing published from shuffled data: a round's public state, a group's
estimate, a DP-estimated public parameter. Each carries the (eps, delta) guarantee that covers
it, the number of well-formed reports that guarantee was computed for (``n_accounted``), and the
number actually received (``n_received``). A protocol describes its releases with
:meth:`protocols.base.ShuffleProtocol.releases`, given the counts received per batch; it either
returns releases whose guarantee holds at the counts received (``n_received >= n_accounted``,
or the release was *re-accounted* at ``n_received``: the local epsilon is fixed, the
amplification recomputed for the smaller crowd), or raises :class:`PrivacyRefusal`.

:func:`gate` is what every release passes, in simulation and over every shuffler, intermediate
rounds included: it asks the protocol for its releases, checks the counts, and refuses (one
clear line, nothing published) when a guarantee is missing or exceeds the operator's
``max_epsilon``. :func:`compose` gives the run's total: basic composition over rounds and over
releases that share users, parallel composition (the maximum) over releases computed on
disjoint groups of users of the same round (SRR-MS's attribute groups).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

KINDS = ("upper", "exact")


class Releasing(Protocol):
    """What the gate needs of a protocol (``protocols.base.ShuffleProtocol`` provides it)."""

    name: str

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]: ...


class PrivacyRefusal(ValueError):
    """A release whose privacy guarantee does not hold (or exceeds ``max_epsilon``): not published."""


@dataclass(frozen=True)
class Release:
    """One published thing and the guarantee that covers it."""

    what: str  # e.g. "round 0: candidate f1 values", "histogram of attribute 'age'"
    mechanism: str  # e.g. "grr(k=16) + uniform shuffle"
    eps: float
    delta: float
    n_accounted: int  # reports the guarantee was computed for
    n_received: int  # well-formed reports actually in the shuffled batch(es)
    bound: str  # the theorem or bound used, e.g. "vr", "balle", "fmt21", "exact", "pure-ldp"
    kind: str = "upper"  # "upper": eps is an upper bound; "exact": the true epsilon
    round: int = 0
    group: str | None = None  # releases on disjoint user groups of a round compose in parallel
    reaccounted: bool = False  # guarantee recomputed at n_received (< the planned count)
    note: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"release {self.what!r}: kind must be one of {KINDS}")
        if not (self.eps >= 0 and math.isfinite(self.eps)):
            raise ValueError(f"release {self.what!r}: eps must be finite and >= 0, got {self.eps}")
        if not 0 <= self.delta < 1:
            raise ValueError(f"release {self.what!r}: delta must lie in [0, 1), got {self.delta}")
        if self.n_accounted < 0 or self.n_received < 0:
            raise ValueError(f"release {self.what!r}: counts must be >= 0")

    @property
    def holds(self) -> bool:
        """The guarantee covers the count received (as planned, or re-accounted at it)."""
        return self.n_received >= self.n_accounted or (
            self.reaccounted and self.n_accounted == self.n_received
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Release:
        fields = set(cls.__dataclass_fields__)
        unknown = set(obj) - fields
        if unknown:
            raise ValueError(f"release: unknown fields {sorted(unknown)}")
        return cls(**dict(obj))


def check_counts(
    counts: Mapping[str, int], planned: Mapping[str, int], what: str
) -> tuple[int, int]:
    """(received, planned) summed over ``planned``'s batches; a batch missing from ``counts``
    counts as 0 received."""
    got = sum(int(counts.get(b, 0)) for b in planned)
    return got, sum(int(v) for v in planned.values())


def gate(
    protocol: Releasing,
    round: int,
    counts: Mapping[str, int],
    max_epsilon: float | None = None,
) -> list[Release]:
    """The releases of ``round`` given the well-formed reports received per batch, or refusal.

    Raises :class:`PrivacyRefusal` if the protocol refuses, if a release's guarantee does not
    cover the count received, or if its epsilon exceeds ``max_epsilon``.
    """
    releases = protocol.releases(round, {str(k): int(v) for k, v in counts.items()})
    if not releases:
        raise PrivacyRefusal(
            f"{protocol.name}: round {round} describes no release; nothing is published"
        )
    out = []
    for r in releases:
        r = replace(r, round=round)
        if not r.holds:
            raise PrivacyRefusal(
                f"{protocol.name}: {r.what}: {r.n_received} reports received, the guarantee "
                f"(eps {r.eps:.4g}, delta {r.delta:.3g}) was accounted for {r.n_accounted}; "
                "refusing to publish"
            )
        if max_epsilon is not None and r.eps > max_epsilon:
            raise PrivacyRefusal(
                f"{protocol.name}: {r.what}: epsilon {r.eps:.4g} at {r.n_received} reports "
                f"exceeds max_epsilon {max_epsilon:g}; refusing to publish"
            )
        out.append(r)
    return out


def compose(releases: Iterable[Release]) -> dict[str, Any]:
    """The run's total guarantee over its releases (basic composition; parallel over groups).

    Within a round, releases with distinct ``group`` values are computed on disjoint users and
    compose in parallel (max of eps and of delta); every other pair composes sequentially
    (sum). Rounds compose sequentially.
    """
    rel = list(releases)
    by_round: dict[int, list[Release]] = {}
    for r in rel:
        by_round.setdefault(r.round, []).append(r)
    eps = delta = 0.0
    for rs in by_round.values():
        shared = [r for r in rs if r.group is None]
        grouped: dict[str, list[Release]] = {}
        for r in rs:
            if r.group is not None:
                grouped.setdefault(r.group, []).append(r)
        e = sum(r.eps for r in shared)
        d = sum(r.delta for r in shared)
        if grouped:
            e += max(sum(r.eps for r in g) for g in grouped.values())
            d += max(sum(r.delta for r in g) for g in grouped.values())
        eps += e
        delta += d
    return {
        "eps": eps,
        "delta": min(delta, 1.0),
        "kind": "upper" if len(rel) != 1 else rel[0].kind,
        "composition": "basic: sum over rounds and over releases sharing users, "
        "max over disjoint groups of a round",
        "releases": len(rel),
    }


def ledger_json(releases: Iterable[Release]) -> dict[str, Any]:
    """``privacy.releases`` and ``privacy.total`` of a result."""
    rel = list(releases)
    return {"releases": [r.to_json() for r in rel], "total": compose(rel)}
