"""Calm over the shuffle: Calm_SRR-MS, Calm_ARR-SS, Calm_PSRR-SS (seed 000, spec Sec. 8.1).

The m published w-way marginals are treated as m "attributes" whose domains are the products of
their attributes' domains; each user's record becomes its m marginal cells and one of the seed's
multidimensional protocols (:class:`protocols.multidim.srr_ms.SRRMS`, :class:`protocols.multidim.arr_ss.ARRSS`,
:class:`protocols.multidim.psrr_ss.PSRRSS`, used unchanged) collects them through the shuffle:

* Calm_SRR-MS: m balanced groups, group i reports marginal i with c_i-RR, one shuffler each;
* Calm_ARR-SS: one shuffler, RR over the union of the m cell domains (sum_i c_i values);
* Calm_PSRR-SS: one shuffler, every cell domain padded to max_i c_i, (marginal id, cell) reports.

Accounting is the inner protocol's: ``paper`` (the closed-form Balle bound, Calculate) or
``tight`` (the DP core's accountant with the RR parameters actually run). The marginal set is
chosen by Calm's trade-off (:func:`protocols.marginals.calm.choose_parameters`) with the *inner protocol's*
exact per-cell variance at a uniform cell frequency (the sampling floor of the attribute choice
included), so a smaller noise level leads to more or wider marginals. The analyzer applies Calm's
post-processing (Norm-Sub + overlap consistency) and publishes the consistent marginals; k-way
queries and synthetic data are answered from them (:mod:`protocols.marginals.calm`,
:mod:`protocols.marginals.synthetic_data`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.marginals.calm import (
    AttrSet,
    CalmParams,
    CellVariance,
    cell_count,
    check_sets,
    choose_parameters,
    marginal_cells,
    modelled_error,
    postprocess,
)
from protocols.multidim.arr_ss import ARRSS
from protocols.multidim.common import MultidimProtocol, check_records, local_budget
from protocols.multidim.psrr_ss import PSRRSS
from protocols.multidim.srr_ms import SRRMS, srr_ms_variance
from protocols.privacy.ledger import Release
from protocols.privacy.record import SEED000, PrivacyStatement

MECHANISMS: dict[str, type[MultidimProtocol]] = {
    "srr-ms": SRRMS,
    "arr-ss": ARRSS,
    "psrr-ss": PSRRSS,
}


def inner_protocol(
    mechanism: str, cells: Sequence[int], n: int, eps_c: float, delta: float, **kw: Any
) -> MultidimProtocol:
    """The seed-000 protocol run on marginal-cell "attributes" of the given sizes."""
    if mechanism not in MECHANISMS:
        raise ValueError(
            f"calm-shuffle: mechanism must be one of {tuple(MECHANISMS)}, got {mechanism!r}"
        )
    return MECHANISMS[mechanism](list(cells), n, eps_c, delta, **kw)


def cell_variances(protocol: MultidimProtocol) -> list[float] | None:
    """Per-cell variance of every marginal at a uniform cell frequency (None if any infeasible)."""
    if not getattr(protocol, "feasible", True) or (
        isinstance(protocol, SRRMS) and None in protocol.eps_local
    ):
        return None
    freqs = [np.full(c, 1.0 / c) for c in protocol.domain_sizes]
    var = protocol.variance(freqs, protocol.estimator)
    if any(v is None for v in var):
        return None
    return [float(np.mean(v)) for v in var]


def shuffle_cell_variance(
    mechanism: str, n: int, eps_c: float, delta: float, **kw: Any
) -> CellVariance:
    """Calm's variance model for the shuffled mechanism (for :func:`choose_parameters`)."""

    def model(cells: list[int]) -> list[float] | None:
        if mechanism == "srr-ms":  # per-marginal budgets, cached over the candidates
            return _srr_ms_variances(tuple(cells), n, eps_c, delta, **kw)
        try:
            proto = inner_protocol(mechanism, cells, n, eps_c, delta, **kw)
        except ValueError:
            return None
        return cell_variances(proto)

    return model


@lru_cache(maxsize=4096)
def _cached_budget(eps_c: float, delta: float, n_eff: float, k: int, **kw: Any) -> float | None:
    return local_budget(eps_c, delta, n_eff, k, mechanism="grr", k=k, **kw).eps_local


def _srr_ms_variances(
    cells: tuple[int, ...], n: int, eps_c: float, delta: float, **kw: Any
) -> list[float] | None:
    """SRR-MS per-cell variances (as SRRMS computes them) with cached local budgets."""
    m = len(cells)
    n_eff = int(kw.get("min_users") or n) // m  # the guaranteed group size, as SRRMS
    if n_eff < 2:
        return None
    opts = dict(accounting=kw.get("accounting", "paper"), policy=kw.get("policy", "strict"))
    opts["bound"] = kw.get("tight_bound", "vr")
    out = []
    for c in cells:
        eps = _cached_budget(eps_c, delta, n_eff, c, **opts)
        if eps is None:
            return None
        out.append(float(np.mean(srr_ms_variance(np.full(c, 1.0 / c), c, eps, n, m))))
    return out


class CalmShuffle(ShuffleProtocol):
    """Calm_X encoder/analyzer: records -> m marginal cells -> SRR-MS / ARR-SS / PSRR-SS."""

    def __init__(
        self,
        domain_sizes: Sequence[int],
        n: int,
        eps_c: float,
        delta: float,
        mechanism: str = "psrr-ss",
        *,
        k: int = 3,
        sets: Sequence[AttrSet] | None = None,
        attributes: Sequence[str] | None = None,
        accounting: str = "paper",
        policy: str = "strict",
        estimator: str = "paper",
        tight_bound: str = "vr",
        min_users: int | None = None,
        max_epsilon: float | None = None,
        **choose: Any,
    ) -> None:
        """Choose the marginals (unless ``sets``) and build the inner protocol on their cells."""
        self.domain_sizes = tuple(int(x) for x in domain_sizes)
        if min(self.domain_sizes, default=0) < 2:
            raise ValueError(
                f"calm-{mechanism}: every domain size must be >= 2, got {self.domain_sizes}"
            )
        if mechanism not in MECHANISMS:
            raise ValueError(
                f"calm-shuffle: mechanism must be one of {tuple(MECHANISMS)}, got {mechanism!r}"
            )
        self.name = f"calm-{mechanism}"
        self.mechanism, self.n, self.k = mechanism, int(n), int(k)
        self.eps_c, self.delta = float(eps_c), float(delta)
        self.attributes = (
            tuple(attributes)
            if attributes is not None
            else tuple(f"A{j}" for j in range(len(self.domain_sizes)))
        )
        kw = dict(
            accounting=accounting,
            policy=policy,
            estimator=estimator,
            tight_bound=tight_bound,
            min_users=min_users,
        )
        self.max_epsilon = self.eps_c if max_epsilon is None else float(max_epsilon)
        model = shuffle_cell_variance(mechanism, self.n, self.eps_c, self.delta, **kw)
        if sets is None:
            try:
                self.params = choose_parameters(self.domain_sizes, model, self.k, **choose)
            except ValueError as exc:
                raise ValueError(
                    f"{self.name}: no feasible marginal set at eps_c={self.eps_c}, "
                    f"delta={self.delta:.3g}, n={self.n} ({accounting} accounting, policy {policy}): "
                    f"no candidate gets a local epsilon for every marginal ({exc}); raise epsilon, "
                    "or use accounting=tight or policy=fallback"
                ) from exc
        else:
            s = check_sets(self.domain_sizes, sets, self.name)
            var = model([cell_count(self.domain_sizes, x) for x in s])
            ne, re_ = (
                modelled_error(self.domain_sizes, s, var, self.k, choose.get("r0", 2e-5))
                if var
                else (float("nan"), float("nan"))
            )
            self.params = CalmParams(max(map(len, s)), 0, tuple(s), ne, re_)
        self.sets: list[AttrSet] = list(self.params.sets)
        self.cells = [cell_count(self.domain_sizes, s) for s in self.sets]
        self.inner = inner_protocol(
            mechanism,
            self.cells,
            self.n,
            self.eps_c,
            self.delta,
            attributes=["x".join(self.attributes[a] for a in s) for s in self.sets],
            max_epsilon=self.max_epsilon,
            **kw,
        )

    @property
    def feasible(self) -> bool:
        """True when the inner protocol has a local epsilon for every marginal."""
        return cell_variances(self.inner) is not None

    def batch_specs(self) -> list[BatchSpec]:
        return self.inner.batch_specs()

    def to_cells(self, records: np.ndarray) -> np.ndarray:
        """(n, m) matrix of every user's cell in each published marginal."""
        x = check_records(records, self.domain_sizes, f"{self.name}.encode")
        if not x.shape[0]:
            return np.zeros((0, len(self.sets)), dtype=np.int64)
        return np.stack([marginal_cells(x, self.domain_sizes, s) for s in self.sets], axis=1)

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        """Map records to marginal cells, then the inner protocol's local randomizer."""
        return self.inner.encode(self.to_cells(records), rng)

    def encode_round(
        self,
        round: int,
        records: np.ndarray,
        rng: np.random.Generator,
        public: dict[str, Any],
        local: dict[str, Any],
    ) -> Batches:
        """A block of users: cells, then the inner protocol's block encoder (its grouping)."""
        return self.inner.encode_round(round, self.to_cells(records), rng, public, local)

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """The inner protocol's releases; Calm's consistency step is post-processing of them."""
        return [
            replace(r, what=f"{r.what} (Calm marginal, Norm-Sub + consistency post-processing)")
            for r in self.inner.releases(round, counts)
        ]

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        """Inner estimate, then Calm's Norm-Sub + consistency over the feasible marginals."""
        raw = self.inner.analyze(shuffled)
        keep = [i for i, m in enumerate(raw["marginals"]) if m is not None]
        sets = [self.sets[i] for i in keep]
        tables = [
            np.nan_to_num(np.asarray(raw["marginals"][i], dtype=np.float64)).reshape(
                [self.domain_sizes[a] for a in self.sets[i]]
            )
            for i in keep
        ]
        var = cell_variances(self.inner)
        tables = postprocess(tables, sets, None if var is None else [var[i] for i in keep])
        return {
            "protocol": self.name,
            "attributes": list(self.attributes),
            "domain_sizes": list(self.domain_sizes),
            "w": self.params.w,
            "m": len(self.sets),
            "sets": [list(s) for s in sets],
            "marginals": [t.ravel().tolist() for t in tables],
            "inner": {k: raw[k] for k in ("protocol", "estimator", "reports", "discarded")},
            "raw_marginals": raw["marginals"],
        }

    def privacy(self) -> dict[str, Any]:
        inner = PrivacyStatement.from_wire(self.inner.privacy(), SEED000)
        return replace(
            inner.with_fields(protocol=self.name, marginal_sets=[list(s) for s in self.sets]),
            note="one report per user on one of the m marginals; privacy of the inner protocol",
        ).wire()


def published_tables(
    estimate: dict[str, Any],
) -> tuple[list[np.ndarray], list[AttrSet], tuple[int, ...]]:
    """(tables shaped by domain, attribute sets, domain sizes) from a Calm_X estimate."""
    ks = tuple(int(x) for x in estimate["domain_sizes"])
    sets = [tuple(int(a) for a in s) for s in estimate["sets"]]
    tables = [
        np.asarray(m, dtype=np.float64).reshape([ks[a] for a in s])
        for m, s in zip(estimate["marginals"], sets, strict=True)
    ]
    return tables, sets, ks
