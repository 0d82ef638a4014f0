"""The trusted shuffler as a ``ShufflerBackend``: a single shuffler party that sees every
message (the simulation baseline); the only backend with the shuffler-side defences
``min_batch`` (noisy crowd threshold) and ``fakes``."""

from __future__ import annotations

from typing import Any, ClassVar

from parties.runtime.backend import ShufflerBackend
from protocols.params import Param


class TrustedBackend(ShufflerBackend):
    name: ClassVar[str] = "trusted"
    plan_ref: ClassVar[str] = "parties.trusted.plan:TrustedShufflePlan"
    verify_check: ClassVar[str] = "parties.verify.shuffle:check_published_estimate"
    default: ClassVar[bool] = True
    params: ClassVar[tuple[Param, ...]] = (
        Param("fakes", "int", "trusted shuffler: uniform fake messages added per batch"),
        Param(
            "min_batch", "int", "trusted shuffler: noisy crowd threshold on the batch size", low=1
        ),
        Param(
            "threshold_epsilon",
            "float",
            "epsilon of the crowd threshold's noisy count",
            low=0,
            open_low=True,
        ),
        Param(
            "threshold_beta",
            "float",
            "failure probability of the crowd threshold",
            low=0,
            open_low=True,
            high=1,
        ),
    )

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
