"""GFIM: group-based top-k frequent-item mining on set-valued data under LDP (seed 003, Zhang 2018).

Two rounds over the multi-round :class:`~protocols.base.ShuffleProtocol` API (spec Sec. 3):

* **Round 0** (group G1). The users are split into two disjoint halves by the public,
  data-independent rule of :mod:`protocols.privacy.grouping` on their global indices (exactly
  ``floor(n/2)`` users in G1 and the rest in G2, whatever the split into client populations;
  without ``n``, in the LDP-only variant whose guarantee does not depend on group sizes, each
  encode call splits its own users in halves). The membership is kept in the block's ``local``
  state. G1 users pad/truncate their set to ``ell`` slots, sample
  one slot and send one randomized bit of a Hadamard row over the whole domain (sampling S-Hist,
  ``protocols.oracles.padding_sampling.ps_hadamard_perturb``; message ``(j, bit)``). The analyzer
  estimates ``f1 = ell * mean(c H[j,v] s)`` for every item (fast Walsh-Hadamard transform) and
  publishes the candidate set C = the top ``k_max = 2k`` items of f1 (ties: smaller item id).
* **Round 1** (group G2; G1 users send nothing). G2 users intersect their *original* set with C,
  pad to ``k_max`` and run sampling S-Hist over C (candidate r is column r of the order-m2
  Hadamard matrix, m2 = 2^ceil(log2 k_max)); ``f2 = k_max * mean(...)`` is unbiased on C.
* **Combination** (eq. 3-5): ``f(v) = f1(v)`` for v not in C, ``f(v) = (1 - w) f1(v) + w f2(v)``
  for v in C, top-k over all of D. The thesis' weight is ``w = (ell - 1)/ell`` (``"thesis"``);
  ``"ivw"`` is the variance-weighted improvement below; ``"phase2"`` uses f2 alone on C.

Each user reports once with budget eps and the groups are disjoint, so GFIM is eps-LDP (parallel
composition). Every report is eps-LDP: ``Pr[bit | S] = mean over slots of Pr[bit | slot]`` lies in
``[1/(e^eps+1), e^eps/(e^eps+1)]`` for every padded set S (spec Sec. 2.4).

**Variance-weighted combination (derivation).** Given C and the data, f1(v) and f2(v) are
independent (disjoint users in GFIM; independent coins of the same users in LDPMiner) and
unbiased for f(v) (up to truncation bias of f1), with variances V1, V2. For
``f = (1 - w) f1 + w f2``, ``Var f = (1 - w)^2 V1 + w^2 V2``; setting the derivative
``-2(1 - w) V1 + 2 w V2`` to zero gives ``w* = V1 / (V1 + V2)`` and ``Var f = V1 V2/(V1 + V2)``,
never above min(V1, V2). Per phase (exact, see ``phase_variance``)
``V = (L^2 c^2 - L^2 mean_i pi_i(v)^2)/N`` with ``c = (e^eps+1)/(e^eps-1)``, padding length L
and N reports; without truncation ``L^2 mean pi^2 = f(v)``, so the analyzer uses the plug-in
``V = (L^2 c^2 - clip(f_hat, 0, 1))/N`` (the f term is below 1/(L^2 c^2) of the total). For
GFIM (N1 = N2, same eps) ``w* ~ ell^2/(ell^2 + k_max^2)``: 0.41 at ell = 50, k_max = 60,
against the thesis' 0.98, and the combined variance drops from ``(V1 + (ell-1)^2 V2)/ell^2``
(~3460 c^2/N) to ~1475 c^2/N. Caveat: C is selected *by f1*, so conditional on v in C, f1(v)
is biased upwards (winner's curse); putting more weight on f1 trades that bias for variance.
The reproduction (seed003) measures both.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.gfim.setvalued_data import to_csr
from protocols.oracles.hadamard_response import hadamard_order, hr_constant, hr_estimate, hr_perturb
from protocols.oracles.padding_sampling import inclusion_moments, pad_and_sample
from protocols.privacy.grouping import public_groups
from protocols.privacy.ledger import PrivacyRefusal, Release
from protocols.privacy.record import PrivacyStatement
from protocols.privacy.statements import shuffled_release

COMBINATIONS = ("thesis", "ivw", "phase2")


def top_indices(f: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values of f, largest first; ties broken by smaller index."""
    f = np.asarray(f, dtype=np.float64)
    if not 1 <= k <= f.size:
        raise ValueError(f"top-k: k must lie in [1, {f.size}], got {k}")
    return np.lexsort((np.arange(f.size), -f))[:k]


def combination_weight(
    rule: str,
    f1: np.ndarray,
    f2: np.ndarray,
    *,
    ell: int,
    k_max: int,
    eps1: float,
    eps2: float,
    n1: int,
    n2: int,
) -> np.ndarray:
    """Weight w on f2 per candidate (module docstring): thesis, ivw (plug-in) or phase2."""
    f2 = np.asarray(f2, dtype=np.float64)
    if rule == "thesis":
        return np.full(f2.shape, (ell - 1) / ell)
    if rule == "phase2":
        return np.ones(f2.shape)
    if rule == "ivw":
        v1 = (ell**2 * hr_constant(eps1) ** 2 - np.clip(f1, 0, 1)) / n1
        v2 = (k_max**2 * hr_constant(eps2) ** 2 - np.clip(f2, 0, 1)) / n2
        return v1 / (v1 + v2)
    raise ValueError(f"GFIM: unknown combination {rule!r}; expected one of {COMBINATIONS}")


def combine(f1: np.ndarray, f2: np.ndarray, candidates: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Eq. 3-5 with weight w: f1 outside C, (1 - w) f1 + w f2 on C."""
    f = np.array(f1, dtype=np.float64, copy=True)
    c = np.asarray(candidates, dtype=np.int64)
    f[c] = (1 - w) * f[c] + w * np.asarray(f2, dtype=np.float64)
    return f


def phase_variance(
    mean_pi_sq: np.ndarray,
    length: int,
    eps: float,
    n_reports: int,
    *,
    mean_pi: np.ndarray | None = None,
    n_population: int | None = None,
) -> np.ndarray:
    """Exact variance of one phase's estimate ``L * mean_i c H[j_i, v] s_i`` over N reports.

    Given the reporting users: ``L^2 (c^2 - mean pi^2)/N`` (pi_i(v) = Pr[user i samples v],
    means over the reporting users). If the reporters are a uniformly random N-subset of
    ``n_population`` users (a GFIM group), pass population means and ``mean_pi``: the
    subsampling adds ``L^2 (mean pi^2 - mean_pi^2)(n - N)/(N (n - 1))``.
    """
    c = hr_constant(eps)
    m2 = np.asarray(mean_pi_sq, dtype=np.float64)
    var = length**2 * (c * c - m2) / n_reports
    if n_population is not None and n_population > n_reports:
        if mean_pi is None:
            raise ValueError("phase_variance: the subsampling term needs mean_pi")
        m1 = np.asarray(mean_pi, dtype=np.float64)
        n, big_n = n_reports, n_population
        var = var + length**2 * (m2 - m1**2) * (big_n - n) / (n * (big_n - 1))
    return var


# The chance level above which a top-k is called mostly noise: an item nobody holds reaching a
# quarter of the users by chance outranks nearly every real item of basket-like data (in the
# bundled and the seed-003 sets the 10th most frequent item is held by well under a quarter).
SPURIOUS_FREQUENCY = 0.25


def ldp_statement(eps: float, composition: str | None = None, **extra: Any) -> dict[str, Any]:
    """The statement of an eps-LDP miner (docs/spec/07-privacy.md P-3, gfim's LDP variant):
    ``model = "ldp"``, ``eps_local = eps_total = eps``, how its rounds compose."""
    how = {} if composition is None else {"composition": composition}
    return PrivacyStatement(
        local_epsilon=eps, extra={"model": "ldp", "eps_total": eps, **extra, **how}
    ).wire()


class TwoPhaseMiner(ShuffleProtocol):
    """Candidate round over D, refinement round over C, eq. 3-5 combination (GFIM/LDPMiner).

    ``split=True``: disjoint random halves report in the two rounds (GFIM); ``False``: every
    user reports in both rounds (LDPMiner). ``eps1``/``eps2`` are the local budgets per round.
    """

    name = "two-phase-miner"
    n_rounds = 2
    # shuffle variants: the reports per round the amplification was computed for
    min_reports: int | None = None

    def __init__(
        self,
        d: int,
        k: int,
        ell: int,
        eps1: float,
        eps2: float,
        *,
        split: bool,
        k_max: int | None = None,
        combination: str = "thesis",
        privacy: dict[str, Any] | None = None,
        n: int | None = None,
    ) -> None:
        k_max = 2 * k if k_max is None else int(k_max)
        if d < 2 or not 1 <= k <= k_max <= d:
            raise ValueError(
                f"{self.name}: need 1 <= k <= k_max <= d, d >= 2 (d={d}, k={k}, k_max={k_max})"
            )
        if ell < 1:
            raise ValueError(f"{self.name}: padding length ell must be >= 1, got {ell}")
        for e in (eps1, eps2):
            if not (e > 0 and math.isfinite(e)):
                raise ValueError(f"{self.name}: epsilons must be finite and > 0, got {e}")
        if combination not in COMBINATIONS:
            raise ValueError(
                f"{self.name}: unknown combination {combination!r}; expected one of {COMBINATIONS}"
            )
        self.d, self.k, self.ell, self.k_max = int(d), int(k), int(ell), k_max
        self.eps1, self.eps2, self.split, self.combination = (
            float(eps1),
            float(eps2),
            split,
            combination,
        )
        self.m1, self.m2 = hadamard_order(self.d), hadamard_order(self.k_max)
        self._privacy = privacy or PrivacyStatement().wire()
        self.n = None if n is None else int(n)
        # shuffle variants set these: per-round (eps, delta) planned at min_reports, the
        # accountant's mechanism, and the users per round the run was calibrated for
        self.round_eps: tuple[float, float] | None = None
        self.round_delta = 0.0
        self.target_note = ""

    def noise_warning(self) -> str | None:
        """Warn when an item nobody holds gets, by chance among the d items of round 1, an
        estimated frequency of half the users or more (public: d, ell, eps, n)."""
        if self.n is None:
            return None
        reports = self.n // 2 if self.split else self.n
        sd = float(np.sqrt(phase_variance(np.zeros(1), self.ell, self.eps1, max(reports, 1))[0]))
        spurious = sd * math.sqrt(2 * math.log(self.d))
        if spurious < SPURIOUS_FREQUENCY:
            return None
        return (
            f"too few users for this item universe and epsilon: among the {self.d} items an "
            f"item nobody holds reaches an estimated frequency of about {spurious:.2f} by "
            f"chance (standard deviation {sd:.2f} with {reports} reports per round), so only "
            "items far more frequent than that can be found; more users, a smaller universe "
            "(fewer distinct items), a smaller ell or a larger --epsilon would help"
        )

    # -- messages --------------------------------------------------------------------------
    def batch_specs(self) -> list[BatchSpec]:
        return self.batch_specs_round(0, {})

    def batch_specs_round(self, round: int, public: dict[str, Any]) -> list[BatchSpec]:
        if round == 0:
            return [BatchSpec("phase1", 2, self.m1)]
        if round == 1:
            return [BatchSpec("phase2", 2, self.m2)]
        raise ValueError(f"{self.name}: no round {round}")

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        raise NotImplementedError(f"{self.name} is a two-round protocol: use encode_round")

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        raise NotImplementedError(f"{self.name} is a two-round protocol: use analyze_round")

    def _check(self, records: np.ndarray) -> np.ndarray:
        r = np.asarray(records)
        if r.ndim != 2 or not np.issubdtype(r.dtype, np.integer):
            raise ValueError(
                f"{self.name}: records must be a 2-D integer matrix of item sets "
                f"(-1 = padding), got {r.dtype} {r.shape}"
            )
        if r.size and (r.min() < -1 or r.max() >= self.d):
            raise ValueError(f"{self.name}: items must lie in [0, {self.d}) (-1 = padding)")
        return r

    def public_grouping(self, ids: np.ndarray, seed: int) -> np.ndarray | None:
        """0 for round 0's group G1, 1 for G2 (None without the split or a known n)."""
        if not self.split or self.n is None:
            return None
        return public_groups(ids, self.n, [self.n // 2, self.n - self.n // 2], seed)

    def groups(
        self, m: int, rng: np.random.Generator, local: dict[str, Any] | None = None
    ) -> np.ndarray:
        """Round-0 membership (G1) of a block of m users (all of them if no split): the public
        rule on global indices when ``n`` is known, else floor(m/2) chosen at random."""
        if not self.split:
            return np.ones(m, dtype=bool)
        if self.n is not None:
            return self.block_grouping(local, m, self.n, rng) == 0
        g1 = np.zeros(m, dtype=bool)
        g1[rng.permutation(m)[: m // 2]] = True
        return g1

    def encode_round(
        self,
        round: int,
        records: np.ndarray,
        rng: np.random.Generator,
        public: dict[str, Any],
        local: dict[str, Any],
    ) -> Batches:
        r = self._check(records)
        if round == 0:
            g1 = self.groups(r.shape[0], rng, local)
            local["group1"] = g1
            indptr, items = to_csr(r[g1])
            sampled = pad_and_sample(indptr, items, self.ell, rng)
            return {"phase1": hr_perturb(sampled, self.m1, self.eps1, rng)}
        if round != 1:
            raise ValueError(f"{self.name}: no round {round}")
        g1 = local.get("group1")
        if g1 is None or g1.shape[0] != r.shape[0]:
            raise ValueError(f"{self.name}: round 1 needs this block's round-0 state")
        cand = self.candidates_from(public)
        pos = np.full(self.d + 1, -1, dtype=np.int64)  # pos[-1] (padding) stays -1
        pos[cand] = np.arange(self.k_max)
        mapped = pos[r[~g1] if self.split else r]
        indptr, items = to_csr(mapped)
        sampled = pad_and_sample(indptr, items, self.k_max, rng)
        return {"phase2": hr_perturb(sampled, self.m2, self.eps2, rng)}

    def candidates_from(self, public: dict[str, Any]) -> np.ndarray:
        """The published candidate set, validated (k_max distinct items of D)."""
        c = np.asarray(public.get("candidates", []), dtype=np.int64)
        if c.shape != (self.k_max,) or np.unique(c).size != self.k_max:
            raise ValueError(
                f"{self.name}: public state must hold {self.k_max} distinct candidates"
            )
        if c.min() < 0 or c.max() >= self.d:
            raise ValueError(f"{self.name}: candidates must lie in [0, {self.d})")
        return c

    # -- analyzer --------------------------------------------------------------------------
    def analyze_round(
        self, round: int, shuffled: Batches, public: dict[str, Any]
    ) -> dict[str, Any]:
        if round == 0:
            rep = shuffled.get("phase1")
            if rep is None or rep.shape[0] == 0:
                raise ValueError(f"{self.name}: round 0 received no reports")
            f1 = hr_estimate(rep, self.m1, self.eps1, self.d, scale=float(self.ell))
            cand = top_indices(f1, self.k_max)
            return {"candidates": cand.tolist(), "f1": f1.tolist(), "n1": int(rep.shape[0])}
        if round != 1:
            raise ValueError(f"{self.name}: no round {round}")
        rep = shuffled.get("phase2")
        if rep is None or rep.shape[0] == 0:
            raise ValueError(f"{self.name}: round 1 received no reports")
        cand = self.candidates_from(public)
        f1 = np.asarray(public["f1"], dtype=np.float64)
        n1, n2 = int(public["n1"]), int(rep.shape[0])
        f2 = hr_estimate(rep, self.m2, self.eps2, self.k_max, scale=float(self.k_max))
        return self.finish(f1, f2, cand, n1, n2, self.combination)

    def finish(
        self, f1: np.ndarray, f2: np.ndarray, cand: np.ndarray, n1: int, n2: int, rule: str
    ) -> dict[str, Any]:
        """Combine the two phases with ``rule`` and take the top-k over D."""
        w = combination_weight(
            rule,
            f1[cand],
            f2,
            ell=self.ell,
            k_max=self.k_max,
            eps1=self.eps1,
            eps2=self.eps2,
            n1=n1,
            n2=n2,
        )
        f = combine(f1, f2, cand, w)
        top = top_indices(f, self.k)
        out = {
            "top_k": top.tolist(),
            "top_k_frequencies": f[top].tolist(),
            "frequencies": f.tolist(),
            "candidates": cand.tolist(),
            "f1": f1.tolist(),
            "f2": np.asarray(f2).tolist(),
            "weight_phase2": np.asarray(w).tolist(),
            "combination": rule,
            "n1": n1,
            "n2": n2,
        }
        if self.min_reports is not None:
            out["reports_accounted"] = self.min_reports
            out["amplification_holds"] = bool(min(n1, n2) >= self.min_reports)
        return out

    def recombine(self, estimate: dict[str, Any], rule: str) -> dict[str, Any]:
        """The same run's estimate under another combination rule (post-processing)."""
        return self.finish(
            np.asarray(estimate["f1"]),
            np.asarray(estimate["f2"]),
            np.asarray(estimate["candidates"]),
            int(estimate["n1"]),
            int(estimate["n2"]),
            rule,
        )

    # -- exact variances ---------------------------------------------------------------------
    def variances(
        self, records: np.ndarray, candidates: np.ndarray, n1: int, n2: int, rule: str | None = None
    ) -> dict[str, np.ndarray]:
        """Exact per-item variances given C (population moments; group subsampling included).

        ``f1``: all of D; ``f2``: the candidates; ``combined``: eq. 3-5 with the rule's weight at
        the true frequencies (exact for ``thesis``/``phase2``; for ``ivw`` the weight at the
        truth, i.e. ignoring the plug-in weight's own noise).
        """
        r = self._check(records)
        n = r.shape[0]
        indptr, items = to_csr(r)
        m1, m2 = inclusion_moments(indptr, items, self.ell, self.d)
        cand = np.asarray(candidates, dtype=np.int64)
        f = np.bincount(items, minlength=self.d)[: self.d] / n
        fc = f[cand]
        sub = n if self.split else None
        v1 = phase_variance(m2, self.ell, self.eps1, n1, mean_pi=m1, n_population=sub)
        v2 = phase_variance(
            fc / self.k_max**2, self.k_max, self.eps2, n2, mean_pi=fc / self.k_max, n_population=sub
        )
        w = combination_weight(
            rule or self.combination,
            f[cand],
            fc,
            ell=self.ell,
            k_max=self.k_max,
            eps1=self.eps1,
            eps2=self.eps2,
            n1=n1,
            n2=n2,
        )
        comb = v1.copy()
        comb[cand] = (1 - w) ** 2 * v1[cand] + w**2 * v2
        return {"f1": v1, "f2": v2, "combined": comb}

    def privacy(self) -> dict[str, Any]:
        return self._privacy

    def projected_counts(self, round: int, counts: dict[str, int]) -> dict[str, int] | None:
        """The most reports round ``round`` can receive, from an earlier round's counts (the
        gate's lookahead): LDPMiner's round 1 has round 0's users at most; GFIM's halves are
        disjoint (None: nothing to project)."""
        if self.split or round != 1:
            return None
        return {**counts, "phase2": int(counts.get("phase1", 0))}

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """Round 0 publishes f1 of every item and the candidate set (public state); round 1 the
        final estimate. Disjoint halves (GFIM) compose in parallel, LDPMiner's rounds share users.
        LDP variants hold at any count; shuffle variants are re-accounted below ``min_reports``."""
        if round not in (0, 1):
            raise PrivacyRefusal(f"{self.name}: no round {round}")
        batch = "phase1" if round == 0 else "phase2"
        what = (
            "round 0 public state: f1 of every item and the candidate set"
            if round == 0
            else "round 1: combined frequencies and the top-k"
        )
        group = ("G1" if round == 0 else "G2") if self.split else None
        eps = self.eps1 if round == 0 else self.eps2
        mech = "padding-and-sampling + Hadamard response"
        if self.min_reports is None:
            return [
                Release(
                    what, f"{mech}, eps = {eps:.4g} (pure LDP)", eps, 0.0, 0,
                    counts.get(batch, 0), "pure LDP (every report is eps-LDP, spec Sec. 2.4)",
                    group=group, note="local guarantee: holds whatever the number of reports",
                )
            ]  # fmt: skip
        if self.round_eps is None:
            raise PrivacyRefusal(f"{self.name}: shuffle variant without a round statement")
        return [
            shuffled_release(
                what,
                f"{mech}, eps_l = {eps:.4g}, shuffled among the round's reports",
                eps_local=eps,
                eps_planned=self.round_eps[round],
                delta=self.round_delta,
                n_accounted=self.min_reports,
                n_received=counts.get(batch, 0),
                bound=str(self._privacy.get("round", {}).get("bound", "vr")) + " (hadamard)",
                accountant={"mechanism": "hadamard"},
                group=group,
                note=self.target_note,
            )
        ]


class GFIM(TwoPhaseMiner):
    """GFIM: disjoint random halves, budget eps in each round; eps-LDP by parallel composition."""

    name = "gfim"

    def __init__(
        self,
        d: int,
        k: int,
        ell: int,
        eps: float,
        *,
        k_max: int | None = None,
        combination: str = "thesis",
        privacy: dict[str, Any] | None = None,
        n: int | None = None,
    ) -> None:
        super().__init__(
            d,
            k,
            ell,
            eps,
            eps,
            split=True,
            k_max=k_max,
            combination=combination,
            n=n,
            privacy=privacy or ldp_statement(eps, "parallel (disjoint groups)"),
        )
        self.eps = float(eps)


def true_top(f: np.ndarray, k: int) -> np.ndarray:
    """True top-k (ties by smaller item id, deterministic)."""
    return top_indices(f, k)


def topk_metrics(
    est_top: np.ndarray, est_freq: np.ndarray, true_f: np.ndarray, k: int
) -> dict[str, float]:
    """Precision |V & V_hat|/k, RE = median over true top-k of |f_hat - f|/f, and NCR.

    NCR (normalised cumulative rank, Wang et al. 2018): the true i-th item scores k - i + 1;
    NCR = sum of the scores of the identified true items / k(k+1)/2.
    """
    truth = true_top(true_f, k)
    est = set(int(x) for x in np.asarray(est_top)[:k])
    hit = np.array([int(v) in est for v in truth])
    scores = np.arange(k, 0, -1, dtype=np.float64)
    tf = np.asarray(true_f, dtype=np.float64)[truth]
    ef = np.asarray(est_freq, dtype=np.float64)[truth]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(tf > 0, np.abs(ef - tf) / tf, np.inf)
    return {
        "precision": float(hit.mean()),
        "re": float(np.median(rel)),
        "ncr": float(scores[hit].sum() / scores.sum()),
    }
