"""A verifier's report: numbered checks (docs/spec/README.md, V-1 .. V-31), one type for both.

``Check`` is one line of a verification: the check of the spec it implements (``vid``, such as
``"V-14"``), a name for people, the verdict, what was counted, the first failure or a detail,
and the seconds it took. ``Report`` collects them. The public record verifier
(``mpc.mixnet.record_verifier``) and ``sdp verify`` (``parties.verify``) both fill these, so
their results, and the JavaScript verifier's, are compared by ``vid``. It lives in the lowest
layer that verifies (``mpc/`` never imports ``parties/``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

_VID = re.compile(r"V-[1-9][0-9]*")
UNNUMBERED = ""  # a check the spec does not number (txpub runs, a crashed protocol check)


@dataclass
class Check:
    """One verification step: spec check ``vid``, name, verdict, count, first failure/detail."""

    vid: str
    name: str
    ok: bool
    count: int = 0
    detail: str = ""
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.vid != UNNUMBERED and not _VID.fullmatch(self.vid):
            raise ValueError(f"check {self.name!r}: {self.vid!r} is not a spec check number V-n")


@dataclass
class Report:
    """All checks of a verification, in order, and what a run verifier adds about the run."""

    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # (receiver, entry index) of messages not in their sender's signed transcript
    unconfirmed: set[tuple[str, int]] = field(default_factory=set)
    trust: str = ""  # where the certificates' fingerprints came from
    anchor: str = ""  # the trust anchor's kind: per-host, one-process (or run directory)
    # senders whose message a receiver signed it had stopped waiting for (left out), in words
    late: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Something was checked and every check passed."""
        return all(c.ok for c in self.checks) and bool(self.checks)

    @property
    def first_failure(self) -> str:
        """``"name: detail"`` of the first failing check, or ``""``."""
        for c in self.checks:
            if not c.ok:
                return f"{c.name}: {c.detail}"
        return ""

    @property
    def first_failed_vid(self) -> str:
        """The spec number of the first failing check, or ``""``."""
        return next((c.vid for c in self.checks if not c.ok), "")

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form of the checks."""
        return {
            "ok": self.ok,
            "first_failure": self.first_failure or None,
            "checks": [asdict(c) for c in self.checks],
        }
