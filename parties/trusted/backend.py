"""The trusted shuffler as a ``ShufflerBackend``: a single shuffler party that sees every
message (the simulation baseline); the only backend with the shuffler-side defences
``min_batch`` (noisy crowd threshold) and ``fakes``."""

from __future__ import annotations

from typing import Any, ClassVar

from parties.runtime.backend import ShufflerBackend


class TrustedBackend(ShufflerBackend):
    name: ClassVar[str] = "trusted"
    plan_ref: ClassVar[str] = "parties.trusted.plan:TrustedShufflePlan"
    verify_check: ClassVar[str] = "parties.verify.shuffle:check_published_estimate"
    default: ClassVar[bool] = True

    def check_defences(self, params: dict[str, Any], protocol: str, workload: Any) -> None:
        """``fakes`` only for protocols whose analyzer removes uniform fakes exactly."""
        from parties.runtime.cluster import ClusterError
        from protocols.defences.fake_removal import fake_reports_of, fakes_setting

        if not fakes_setting(params):
            return
        if workload is None:
            raise ClusterError(f"fakes: {protocol} is not a shuffled workload; leave fakes unset")
        fake_reports_of(workload.protocol)  # ValueError: its analyzer cannot remove them


BACKEND = TrustedBackend()
