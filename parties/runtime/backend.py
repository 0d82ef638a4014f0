"""``ShufflerBackend``: every fact and hook of one shuffler, in one object.

A shuffler (trusted, mix-net, MPC) is one package under ``parties/`` with a ``backend.py``
that subclasses ``ShufflerBackend`` and one line in ``BACKEND_MODULES``. Everything else in
the runtime (launcher, ``sdp cluster``, run options, cost model, ``sdp verify``, the client
round loop) asks the backend of a run instead of comparing the shuffler's name:

- ``name``: the ``--shuffler`` value and the cluster file's ``[run] shuffler``;
- ``plan_ref``: its run plan (``parties.runtime.plans.RunPlan``: layout, peers, roles);
- ``server_roles``: roles whose costs are server costs (``parties.costs.model``);
- ``tolerated_roles``: roles whose failure a published run tolerates (launcher, verify);
- ``verify_check``: the ``sdp verify`` check of its published runs (``module:function``);
- ``params``: the run parameters it reads (``protocols.params.Param``: any protocol accepts
  them); ``runtime_params``: those defaulted from a layout option (set by ``resolve_job``);
- ``extra_ports`` / ``assign_ports``: ports beyond one per party (the MPC servers' mesh);
- ``prepare_party_dirs``: files it needs in the party directories (MPC TLS keys);
- ``check_params`` / ``check_workload`` / ``check_defences``: launch-time refusals of what
  its parties would refuse mid-run;
- ``start_client`` / ``round_state`` / ``submit``: how a client party hands one block of one
  round to the shuffler (the round loop around them is ``parties.clients.loop``; the plan of
  each package implements them, so that the backend module stays light).

Backend modules import only light modules at import time (the plan is loaded on first use),
so that ``sdp verify`` and ``sdp costs`` never pay for MPyC or the mix-net's arithmetic.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, ClassVar

from parties.runtime.errors import ClusterError, did_you_mean

# one registration per shuffler: the module holding its ``BACKEND`` (a ShufflerBackend)
BACKEND_MODULES: tuple[str, ...] = (
    "parties.trusted.backend",
    "parties.mixnet.backend",
    "parties.mpc_shuffle.backend",
)


class BackendError(ClusterError):
    """An unknown shuffler, or an option the shuffler refuses."""


def load_plan(ref: str) -> Any:
    """An instance of the run plan ``module:Class``; ClusterError if the module is missing."""
    mod, cls = ref.split(":")
    try:
        module = importlib.import_module(mod)
    except ModuleNotFoundError as exc:
        if exc.name == mod:
            raise BackendError(f"run plan {ref} is not available in this build") from None
        raise
    return getattr(module, cls)()


class ShufflerBackend:
    """The hooks a shuffler has; the defaults are those of a shuffler that needs nothing."""

    name: ClassVar[str] = ""
    plan_ref: ClassVar[str] = ""
    server_roles: ClassVar[frozenset[str]] = frozenset()
    tolerated_roles: ClassVar[frozenset[str]] = frozenset({"client"})
    verify_check: ClassVar[str] = ""
    params: ClassVar[tuple[Any, ...]] = ()  # the ``protocols.params.Param`` it reads
    runtime_params: ClassVar[dict[str, str]] = {}  # param -> layout option giving its default
    default: ClassVar[bool] = False  # the shuffler of ``sdp run PROTOCOL`` without --shuffler

    def plan(self) -> Any:
        """The run plan (``RunPlan``) of this shuffler, imported on first use."""
        if self._plan is None:
            self._plan = load_plan(self.plan_ref)
        return self._plan

    _plan: Any = None

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        """[(party name, role)] of a run with these layout options."""
        return self.plan().layout(options)

    def peers(self, cluster: Any, name: str) -> set[str]:
        """The parties ``name`` exchanges messages with."""
        return self.plan().peers(cluster, name)

    def set_defaults(self, params: dict[str, Any], layout: dict[str, Any]) -> None:
        """The runtime parameters this shuffler reads, defaulted from the layout options."""
        for param, option in self.runtime_params.items():
            params.setdefault(param, layout[option])

    def extra_ports(self, layout: dict[str, Any]) -> int:
        """Ports the run needs beyond one per party."""
        return 0

    def assign_ports(self, params: dict[str, Any], ports: list[int]) -> None:
        """Record the ``extra_ports`` ports in the run parameters (nothing by default)."""

    def prepare_party_dirs(self, cluster: Any, dirs: dict[str, Path]) -> None:
        """Write what this shuffler's parties need into their directories (nothing by default)."""

    def check_params(self, params: dict[str, Any], layout: dict[str, Any]) -> None:
        """Refuse at launch parameters a party would refuse mid-run (ValueError)."""

    def check_workload(self, params: dict[str, Any], workload: Any) -> None:
        """Refuse at launch batches a party would refuse mid-run (ValueError)."""

    def check_defences(self, params: dict[str, Any], protocol: str, workload: Any) -> None:
        """The shuffler-side defences ``min_batch`` (crowd threshold) and ``fakes`` are refused
        unless a backend applies them (one line each)."""
        from protocols.defences.fake_removal import fakes_setting

        if params.get("min_batch") is not None:
            raise BackendError(
                f"min_batch: only the trusted shuffler applies the crowd threshold (the "
                f"{self.name} shuffler would need its servers to count and add noise jointly); "
                "leave it unset"
            )
        if fakes_setting(params):
            raise BackendError(
                f"fakes: only the trusted shuffler adds fake messages (the {self.name} shuffler "
                "would need every server to contribute encrypted or secret-shared fakes); "
                "leave fakes unset"
            )

    async def start_client(self, node: Any, cluster: Any, workload: Any) -> Any:
        """Per-run state of a client party before its first round (the plan's)."""
        return await self.plan().start_client(node, cluster, workload)

    async def round_state(self, node: Any, cluster: Any, run: Any, rnd: int) -> dict[str, Any]:
        """The analyzer's public state before round ``rnd`` > 0 (the plan's)."""
        return await self.plan().round_state(node, cluster, run, rnd)

    async def submit(self, node: Any, run: Any, rnd: int, block: Any) -> None:
        """Hand one block of one round (``parties.clients.loop.Block``) to the shuffler; ``run``
        is what ``start_client`` returned. Each plan implements it in its own package."""
        await self.plan().submit(node, run, rnd, block)


_REGISTRY: dict[str, ShufflerBackend] = {}


def backends() -> dict[str, ShufflerBackend]:
    """Every registered backend by name (``BACKEND_MODULES`` order)."""
    if not _REGISTRY:
        for mod in BACKEND_MODULES:
            b = importlib.import_module(mod).BACKEND
            if not isinstance(b, ShufflerBackend) or not b.name or b.name in _REGISTRY:
                raise TypeError(f"{mod}.BACKEND is not a ShufflerBackend with a unique name")
            _REGISTRY[b.name] = b
    return dict(_REGISTRY)


def shuffler_names() -> tuple[str, ...]:
    return tuple(backends())


def default_shuffler() -> str:
    """The shuffler of a run that names none."""
    return next(n for n, b in backends().items() if b.default)


def backend(name: str) -> ShufflerBackend:
    """The backend of shuffler ``name``; BackendError with the known names otherwise."""
    known = backends()
    if name not in known:
        raise BackendError(
            f"unknown shuffler {name!r}{did_you_mean(name, list(known))}; known: "
            + ", ".join(known)
        )
    return known[name]


def all_server_roles() -> frozenset[str]:
    """Roles whose costs are server costs, over every shuffler."""
    return frozenset().union(*(b.server_roles for b in backends().values()))
