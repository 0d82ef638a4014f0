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
``max_epsilon`` (checked against the run's composed total so far, not one release alone).
:func:`compose` gives the run's total: basic composition over releases that share users, parallel
composition (the maximum) over releases computed on disjoint groups of users. A ``group`` label
names one set of users for the whole run (SRR-MS's attribute groups, GFIM's G1 in round 0 and G2
in round 1): the assignment of users to groups must be data-independent, and then a user's record
touches only the releases of its own group, whatever the round and however the later rounds
adapt to the earlier ones (adaptive parallel composition). ``group=None`` means all users.

Counts. ``counts`` maps each batch of the round to its number of well-formed messages. Protocols
whose guarantee rests on *users* rather than messages (multi-message protocols: Split-Mix's
shares, AUE's noise messages, dummies, MURS's fakes) read the reserved key :data:`USERS`: the
number of users whose submissions reached the shuffler whole. The caller fills it in
(:func:`protocols.base.simulate` does; so must the parties: the sum of the ``users`` of the
accepted submissions). A protocol that needs it and does not get it refuses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

KINDS = ("upper", "exact")
USERS = "#users"  # reserved key of ``counts``: users whose submissions reached the shuffler whole


class Releasing(Protocol):
    """What the gate needs of a protocol (``protocols.base.ShuffleProtocol`` provides it)."""

    name: str

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]: ...

    # optional: ``projected_counts(round, counts)``, the most reports a later round can receive
    # given an earlier round's counts (None: no projection); the gate's lookahead uses it


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


def users_received(counts: Mapping[str, int], who: str) -> int:
    """``counts[USERS]``, or :class:`PrivacyRefusal` naming ``who`` when the caller left it out."""
    if USERS not in counts:
        raise PrivacyRefusal(
            f"{who}: the guarantee rests on the number of users whose submissions arrived whole, "
            f"and the caller gave none (counts[{USERS!r}]); refusing to publish"
        )
    return int(counts[USERS])


def gate(
    protocol: Releasing,
    round: int,
    counts: Mapping[str, int],
    max_epsilon: float | None = None,
    previous: Iterable[Release] = (),
) -> list[Release]:
    """The releases of ``round`` given the well-formed reports received per batch, or refusal.

    Raises :class:`PrivacyRefusal` if the protocol refuses, if a release's guarantee does not
    cover the count received, or if the run's composed epsilon (``previous`` releases of the run
    plus this round's) exceeds ``max_epsilon``; ``None`` takes the protocol's own
    ``max_epsilon`` attribute (set from the run parameters, default the target epsilon; no cap
    when that is ``None`` too).
    """
    cap = max_epsilon if max_epsilon is not None else getattr(protocol, "max_epsilon", None)
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
        out.append(r)
    if cap is not None:
        total = compose([*previous, *out])["eps"]
        if total > cap * (1 + 1e-12):
            worst = max(out, key=lambda r: r.eps)
            raise PrivacyRefusal(
                f"{protocol.name}: round {round}: epsilon {total:.4g} (composed over the run; "
                f"{worst.what}: {worst.eps:.4g} at {worst.n_received} reports"
                f"{', re-accounted' if worst.reaccounted else ''}) exceeds max_epsilon "
                f"{cap:g}; refusing to publish"
            )
    _look_ahead(protocol, round, counts, [*previous, *out], cap)
    return out


def _look_ahead(
    protocol: Releasing, round: int, counts: Mapping[str, int], so_far: list[Release], cap: Any
) -> None:
    """Refuse round ``round`` already when a later round cannot be covered even with the most
    reports it can receive (``protocol.projected_counts``, where the protocol defines it): a
    round's result goes out to the clients and the shuffler, so a refusal later would leave it
    released with nothing published."""
    project = getattr(protocol, "projected_counts", None)
    if project is None:
        return
    planned = list(so_far)
    for later in range(round + 1, int(getattr(protocol, "n_rounds", 1))):
        proj = project(later, {str(k): int(v) for k, v in counts.items()})
        if proj is None:
            return
        try:
            rel = [replace(r, round=later) for r in protocol.releases(later, proj)]
        except PrivacyRefusal as exc:
            raise PrivacyRefusal(
                f"{protocol.name}: round {round}: round {later} could not be covered ({exc}); "
                f"refusing before round {round}'s result is released"
            ) from None
        planned += rel
        bad = [r for r in rel if not r.holds]
        total = compose(planned)["eps"]
        if bad or (cap is not None and total > cap * (1 + 1e-12)):
            worst = bad[0] if bad else max(rel, key=lambda r: r.eps)
            why = (
                f"accounted for {worst.n_accounted}"
                if bad
                else f"eps {worst.eps:.4g}, composed {total:.4g} > max_epsilon {cap:g}"
            )
            raise PrivacyRefusal(
                f"{protocol.name}: round {round}: round {later} could not be covered ({worst.what}"
                f": at most {worst.n_received} reports, {why}); refusing before round {round}'s "
                "result is released"
            )


def compose(releases: Iterable[Release]) -> dict[str, Any]:
    """The run's total guarantee over its releases (basic composition; parallel over groups).

    Releases with distinct ``group`` labels are computed on disjoint users (for the whole run)
    and compose in parallel (max of eps and of delta); releases of one group compose
    sequentially among themselves, and releases with ``group=None`` (all users) sequentially
    with everything.
    """
    rel = list(releases)
    shared = [r for r in rel if r.group is None]
    grouped: dict[str, list[Release]] = {}
    for r in rel:
        if r.group is not None:
            grouped.setdefault(r.group, []).append(r)
    eps = sum(r.eps for r in shared)
    delta = sum(r.delta for r in shared)
    if grouped:
        eps += max(sum(r.eps for r in g) for g in grouped.values())
        delta += max(sum(r.delta for r in g) for g in grouped.values())
    return {
        "eps": eps,
        "delta": min(delta, 1.0),
        "kind": "upper" if len(rel) != 1 else rel[0].kind,
        "composition": "basic: sum over releases sharing users (every round), "
        "max over disjoint groups of users",
        "releases": len(rel),
        "reaccounted": any(r.reaccounted for r in rel),
    }


def ledger_json(releases: Iterable[Release]) -> dict[str, Any]:
    """``privacy.releases`` and ``privacy.total`` of a result."""
    rel = list(releases)
    return {"releases": [r.to_json() for r in rel], "total": compose(rel)}
