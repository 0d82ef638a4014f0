"""The privacy-statement record: what the analyzer signs as ``privacy``, one name per field.

The published JSON keys are the wire format (docs/spec/07-privacy.md P-1, P-3) and do not
change; the record's field names say what each value means, and :meth:`PrivacyStatement.wire`
writes the keys. Where families publish the same meaning under different keys, a
:class:`WireNames` says which: the seed-000 protocols publish the *target* as ``eps_c`` and the
local epsilon as ``eps_l`` (:data:`SEED000`), the almost-single-message frontier (fe1, hhd) the
target as ``eps_target`` (:data:`FRONTIER`), the others the target as ``eps_central_target``
and the local epsilon as ``eps_local`` (:data:`STANDARD`); ``eps_central`` is always the
*certified* (achieved) central epsilon, never the target.

Every protocol's ``privacy()`` returns :meth:`PrivacyStatement.wire`, a :class:`Published`
mapping (a plain ``dict`` to its readers; its type says the record wrote it, which
``tests/test_workload_params.py`` checks for every registered workload).

A field left :data:`UNSTATED` is not published (a protocol states only what P-3 lists for it);
``None`` is published as ``null`` (e.g. a blanket protocol's ``eps_local``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final


class _Unstated:
    """The marker of a field a statement does not publish."""

    _instance: _Unstated | None = None

    def __new__(cls) -> _Unstated:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSTATED"

    def __bool__(self) -> bool:
        return False


UNSTATED: Final = _Unstated()


@dataclass(frozen=True)
class WireNames:
    """The published key of each record field (docs/spec/07-privacy.md)."""

    certified_epsilon: str = "eps_central"
    certified_epsilon_lower: str = "eps_central_lower"
    target_epsilon: str = "eps_central_target"
    target_missed: str = "target_missed"
    target_note: str = "target_note"
    delta: str = "delta"
    local_epsilon: str = "eps_local"
    users_accounted: str = "n_accounted"
    bound: str = "bound"
    mechanism: str = "mechanism"
    note: str = "note"


STANDARD = WireNames()
SEED000 = WireNames(target_epsilon="eps_c", local_epsilon="eps_l")
FRONTIER = WireNames(target_epsilon="eps_target")


class Published(dict[str, Any]):
    """The published ``privacy`` mapping of a :class:`PrivacyStatement` (what ``wire`` gives):
    a ``dict``, typed so that a statement built without the record is told apart."""


@dataclass(frozen=True)
class PrivacyStatement:
    """A protocol's privacy statement (``ShuffleProtocol.privacy()``).

    ``certified_epsilon``: the central epsilon the statement certifies (wire ``eps_central``);
    ``certified_epsilon_lower``: a lower bound on it (informational); ``target_epsilon``: the
    central target the run asked for (``epsilon``; wire ``eps_central_target``, seed 000
    ``eps_c``); ``target_missed``/``target_note``: whether (and why) the certified epsilon
    exceeds the target; ``delta``; ``local_epsilon``: the randomizer's epsilon (wire
    ``eps_local``, seed 000 ``eps_l``: a list per group there); ``users_accounted``: the count
    the guarantee is calibrated at (wire ``n_accounted``); ``bound``: the amplification bound;
    ``mechanism``: the local randomizer; ``note``: the accountant's remark. ``extra`` holds a
    protocol's own fields, published under their own keys (never one of the above)."""

    certified_epsilon: Any = UNSTATED
    certified_epsilon_lower: Any = UNSTATED
    target_epsilon: Any = UNSTATED
    target_missed: Any = UNSTATED
    target_note: Any = UNSTATED
    delta: Any = UNSTATED
    local_epsilon: Any = UNSTATED
    users_accounted: Any = UNSTATED
    bound: Any = UNSTATED
    mechanism: Any = UNSTATED
    note: Any = UNSTATED
    extra: Mapping[str, Any] = field(default_factory=dict)
    names: WireNames = STANDARD

    def __post_init__(self) -> None:
        taken = {getattr(self.names, f.name) for f in fields(WireNames)}
        clash = sorted(taken & set(self.extra))
        if clash:
            raise ValueError(f"privacy statement: extra fields {clash} have a record field")

    def wire(self) -> Published:
        """The published ``privacy`` mapping: every stated field under its wire key, then
        ``extra``."""
        out = Published()
        for f in fields(WireNames):
            value = getattr(self, f.name)
            if value is not UNSTATED:
                out[getattr(self.names, f.name)] = value
        out.update(self.extra)
        return out

    def with_fields(self, **extra: Any) -> PrivacyStatement:
        """This statement with protocol fields added to (or replaced in) ``extra``."""
        return replace(self, extra={**self.extra, **extra})

    @classmethod
    def from_wire(
        cls, published: Mapping[str, Any], names: WireNames = STANDARD
    ) -> PrivacyStatement:
        """The record of a published mapping (inverse of :meth:`wire`)."""
        rest = dict(published)
        stated = {}
        for f in fields(WireNames):
            key = getattr(names, f.name)
            if key in rest:
                stated[f.name] = rest.pop(key)
        return cls(**stated, extra=rest, names=names)
