"""MURS as the survey ran it: SLH reports plus uniform fake reports totalling 1% of n.

MURS (Wang et al., VLDB 2020) has m shufflers each add uniform fake reports; the survey's
experiment used fakes = 1% of n. The protocol is :class:`protocols.hp_sdp.murs.MURSProtocol`
(OLH reports (seed, y), fakes (uniform seed, uniform y), unbiased estimator subtracting n_r/g from
every support count) with the fake count fixed at F = ceil(r n), r = 0.01, and (g, eps_l) chosen
for that r by MURS's blanket condition (``analysis.blanket_naive_fn`` of the authors' code):

    (n - 1)/(e^eps_l + g - 1) + F'/g >= 14 ln(2/delta)/eps_c^2,

F' = F - 1 crediting the fakes a target user does not control, g minimising the exact MSE.

Who adds the fakes. Until the shuffler roles inject them (``protocols.defences.fake_messages``;
the lead wires it into ``parties/``), F designated users each send one fake report next to their
own: records are (value, sends_fake) rows and the workload marks the first F users. The fakes are
data-independent, so designating users costs no privacy, and the analyzer knows F (public):
users received = rows - F (exactly when nobody dropped, a lower bound otherwise).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.accountant.balle import blanket_epsilon_of_mass
from protocols.base import Batches
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_domain_and_users
from protocols.hp_sdp.baselines import blanket_mass
from protocols.hp_sdp.murs import MURSProtocol, murs_eps_local, murs_mse
from protocols.hp_sdp.protocol import seed_bound, srr_encode, srr_support
from protocols.oracles.olh import olh_family
from protocols.privacy.record import PrivacyStatement

FAKE_RATE = 0.01


def murs_blanket_epsilon(users: int, eps_l: float, g: int, fakes: int, delta: float) -> float:
    """eps_c = sqrt(14 ln(2/delta) / ((users-1)/(e^eps_l+g-1) + (F-1)/g))."""
    mass = (users - 1) / (math.exp(min(eps_l, 700.0)) + g - 1) + max(0, fakes - 1) / g
    return blanket_epsilon_of_mass(mass, delta)


class SurveyMURS(MURSProtocol, CatalogueProtocol):
    """MURS with F = ceil(0.01 n) fake reports; records are (value, sends_fake) rows."""

    release_what = "histogram of [d]"

    def __init__(self, d: int, n: int, eps_c: float, delta: float, fake_rate: float = FAKE_RATE):
        check_domain_and_users("MURS", d, n)
        self.d, self.n, self.eps_c, self.delta = int(d), int(n), float(eps_c), float(delta)
        self.accounting, self.certificate, self.r = "paper", "blanket", float(fake_rate)
        self.fakes = math.ceil(fake_rate * self.n)
        b = blanket_mass(self.eps_c, self.delta)
        credited = max(0, self.fakes - 1)  # the fakes a target user does not control

        def mse(g: int) -> float:
            e = murs_eps_local(self.n, b, g, credited)
            return murs_mse(self.n, self.d, g, self.fakes / self.n, e)

        grid = sorted({max(2, int(round(x))) for x in np.geomspace(2, 1 << 20, 81)})
        best = min(grid, key=mse)
        self.g = min(range(max(2, int(best / 1.15)), int(best * 1.15) + 2), key=mse)
        e = murs_eps_local(self.n, b, self.g, credited)
        if e is None:
            raise ValueError(
                f"MURS: no feasible (g, eps_l) for n={n}, eps_c={eps_c}, delta={delta}"
            )
        self.eps_l = e
        self.family = olh_family(self.d, self.g)
        self._eps_use = min(self.eps_l, 700.0)
        self.name = "murs"

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        r = np.asarray(records, dtype=np.int64)
        if r.ndim != 2 or r.shape[1] != 2:
            raise ValueError(
                f"MURS.encode: records must be (value, sends_fake) rows, got {r.shape}"
            )
        v, flag = r[:, 0], r[:, 1] != 0
        if v.size and (v.min() < 0 or v.max() >= self.d):
            raise ValueError(f"MURS.encode: values must lie in [0, {self.d})")
        real = srr_encode(v, self.family, self._eps_use, rng)
        k = int(flag.sum())
        fake = np.stack(
            [rng.integers(0, seed_bound(self.family), k), rng.integers(0, self.g, k)], axis=1
        )
        return {"reports": np.concatenate([real, fake])}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        msgs = shuffled.get("reports")
        if msgs is None:
            raise ValueError("MURS analyzer: no 'reports' batch received")
        support, n_ok = srr_support(msgs, self.family)
        users = n_ok - self.fakes
        if users < 1:
            raise ValueError(f"MURS analyzer: {n_ok} valid messages for {self.fakes} fakes")
        from protocols.oracles.olh import olh_estimate_from_support

        raw = olh_estimate_from_support(
            np.asarray(support, np.float64) - self.fakes / self.g, self._eps_use, self.family, users
        )
        return {
            "counts": (raw * users).tolist(),
            "raw_frequencies": raw.tolist(),
            "reports": n_ok,
            "fakes": self.fakes,
            "invalid": int(msgs.shape[0] - n_ok),
        }

    def messages_per_user(self) -> float:
        return 1.0 + self.fakes / self.n

    def max_messages(self) -> dict[str, int]:
        return {"reports": 1}

    def certified_users(self, counts: dict[str, int]) -> int:
        from protocols.catalogue.common import USERS_KEY

        if USERS_KEY in counts:
            return int(counts[USERS_KEY])
        return max(0, int(counts.get("reports", 0)) - self.fakes)

    def mechanism(self) -> str:
        return f"olh(g={self.g}, eps_l={self.eps_l:.4g}) + {self.fakes} uniform fakes"

    def guarantee(self, users: int) -> Guarantee:
        eps = murs_blanket_epsilon(users, self.eps_l, self.g, self.fakes, self.delta)
        if eps > 1 + 1e-12:  # Theorem 4 needs eps_c <= 1 (tolerance: float rounding at 1)
            raise ValueError(f"blanket bound gives eps = {eps:.4g} > 1 (outside Theorem 4)")
        return Guarantee(eps, self.delta, "murs blanket (Theorem 4 + fakes)")

    def privacy(self) -> dict[str, Any]:
        slh = PrivacyStatement.from_wire(super().privacy())
        return slh.with_fields(fakes=self.fakes, fake_rate=self.r).wire()


def murs_records(values: np.ndarray, fakes: int) -> np.ndarray:
    """(value, sends_fake) rows with the first ``fakes`` users designated to send a fake."""
    v = np.asarray(values, dtype=np.int64).reshape(-1)
    flag = np.zeros(v.size, dtype=np.int64)
    flag[: min(fakes, v.size)] = 1
    return np.stack([v, flag], axis=1)
