"""``sdp costs --model RUNS... [--validate RUN]... [--predict n=..,k=..,t=..,rtt=..]``: a cost
model fitted to measured runs of one protocol and shuffler (``docs/costs.md``, ``docs/scale.md``).

Per (role, phase), per party of that role: CPU seconds, bytes and messages sent are linear in
the user count n (features 1 and n; plus n*k when the runs vary the server count k); messages per party are a + b k (batched: independent of n). A run's totals multiply by the parties per role (clients as in the runs, servers k,
one analyzer/shuffler). The threshold t scales the decryption phase (``mix.decrypt``) by
t / t_fit. Wall (the whole run: first process start to the last ledger row) = S + CPU / cores +
one_way_hops(k) * rtt / 2, where the hops are the run's longest causal message chain
(``parties.costs.critical``), linear in k, CPU is the predicted total and cores the measuring
host's (each party's ledger records ``host_cores``): all parties share the cores and keep them
busy, their process pools and threads included; S (start-up and scheduling latency) is the
median residual of the fitted runs. On dedicated
hosts (one per party, no contention) ``wall_dedicated_s`` = critical CPU (per protocol round and
step the busiest party's CPU, steps in sequence; linear in n and n*k) + hops * rtt / 2. All
fits are non-negative least squares.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parties.costs.report import load_costs
from parties.runtime.backend import all_server_roles

# roles whose costs are server costs: every shuffler backend's, and "server" (older runs)
SERVER_ROLES = all_server_roles() | {"server"}
METRICS = ("cpu_s", "bytes_sent", "msgs_sent")


@dataclass
class RunFacts:
    """What the model needs from one measured run."""

    name: str
    protocol: str
    shuffler: str
    n: int
    k: int
    t: int
    rtt: float
    roles: dict[str, int]  # parties per role
    per_party: dict[tuple[str, str], dict[str, float]]  # (role, phase) -> metric per party
    cpu: float
    bytes: float
    msgs: float
    wall: float  # run wall: the first party's start to the last row's end
    hops: int
    crit_cpu: float = 0.0  # sum over (round, phase, step) of the busiest party's CPU, no setup
    cores: int = 1  # the measuring host's cores
    under_load: bool | None = None  # the run's load verdict (parties/costs/load.py)
    load_reason: str = ""


def _roles(run_dir: Path) -> dict[str, str]:
    import tomllib

    data = tomllib.loads((run_dir / "cluster.toml").read_text())
    return {p["name"]: p["role"] for p in data.get("party", [])}


def run_facts(run_dir: Path | str) -> RunFacts:
    """Facts of one run directory (its costs.json, cluster.toml and transcripts)."""
    run_dir = Path(run_dir)
    costs = load_costs(run_dir)
    if "critical_path" not in costs:
        from parties.costs.report import merge_costs

        costs = merge_costs(run_dir)
    roles = _roles(run_dir)
    count: dict[str, int] = {}
    for r in roles.values():
        count[r] = count.get(r, 0) + 1
    per: dict[tuple[str, str], dict[str, float]] = {}
    starts, ends = [], []
    for p in costs["parties"]:
        role = roles.get(p["party"], "?")
        for row in p["rows"]:
            acc = per.setdefault((role, row["phase"]), dict.fromkeys(METRICS, 0.0))
            for m in METRICS:
                acc[m] += row[m] / count.get(role, 1)
            if row.get("end") is not None:
                ends.append(row["end"])
            if row.get("start") is not None:
                starts.append(row["start"])
    job = costs.get("job") or {}
    net = costs.get("network") or {}
    servers = sum(c for r, c in count.items() if r in SERVER_ROLES)
    rows = [row for p in costs["parties"] for row in p["rows"]]
    return RunFacts(
        name=Path(run_dir).name,
        protocol=str(job.get("protocol")),
        shuffler=str(job.get("shuffler")),
        n=int(job.get("users") or 0),
        k=servers,
        t=int(job.get("threshold") or 0),
        rtt=float(net.get("rtt_ms", 0.0)) / 1e3,
        roles=count,
        per_party=per,
        cpu=sum(r["cpu_s"] for r in rows),
        bytes=sum(r["bytes_sent"] for r in rows),
        msgs=sum(r["msgs_sent"] for r in rows),
        wall=(max(ends) - min(starts)) if starts and ends else 0.0,
        # MPyC's mesh rounds are not in the transcripts: the busiest party's flights add to it
        hops=_hops(costs),
        crit_cpu=sum(
            max((q.get("cpu_s") or 0.0) for q in st["parties"].values())
            for r in costs["rounds"]
            for st in r["steps"]
            if st["phase"] != "setup"
        ),
        cores=_host_cores(costs),
        under_load=(costs.get("load") or {}).get("under_load"),
        load_reason=(costs.get("load") or {}).get("reason", ""),
    )


def _hops(costs: dict[str, Any]) -> int:
    """The critical path's one-way hops, MPyC's flights included (ledgers merged before the
    critical path walked them: the busiest party's flights added to the transcripts' hops)."""
    cp = costs["critical_path"]
    if "mpyc_hops" in cp:
        return int(cp["one_way_hops"])
    return int(cp["one_way_hops"]) + max(
        (sum(r.get("mpyc_flights", 0) for r in p["rows"]) for p in costs["parties"]), default=0
    )


def _host_cores(costs: dict[str, Any]) -> int:
    """The cores of the host the run was measured on (the fewest any party saw); runs written
    before the ledger recorded ``host_cores`` were measured on this machine."""
    here = os.cpu_count() or 1
    return min((p.get("host_cores") or here) for p in costs["parties"]) if costs["parties"] else 1


def _fit(xs: list[list[float]], ys: list[float]) -> np.ndarray:
    """Non-negative least squares (a cost per user or per hop is never negative)."""
    from scipy.optimize import nnls

    a = np.array(xs, dtype=float)
    scale = np.maximum(np.abs(a).max(axis=0), 1e-12)  # columns of 1 and n differ by 10^5
    coef, _ = nnls(a / scale, np.array(ys, dtype=float))
    return coef / scale


class CostModel:
    """Linear per-element costs fitted to runs of one protocol and shuffler."""

    def __init__(self, runs: list[RunFacts]) -> None:
        if not runs:
            raise ValueError("no runs to fit")
        kinds = {(r.protocol, r.shuffler) for r in runs}
        if len(kinds) > 1:
            raise ValueError(f"runs of different protocols/shufflers: {sorted(kinds)}")
        self.protocol, self.shuffler = kinds.pop()
        self.runs = runs
        self.vary_k = len({r.k for r in runs}) > 1
        self.vary_n = len({r.n for r in runs}) > 1
        self.t_fit = float(np.mean([r.t for r in runs])) or 1.0
        self.clients = float(np.mean([r.roles.get("client", 0) for r in runs]))
        self.coef: dict[tuple[str, str, str], np.ndarray] = {}
        keys = sorted({key for r in runs for key in r.per_party})
        for key in keys:
            server = key[0] in SERVER_ROLES
            for m in METRICS:
                # messages are batched per party: constant in n (per server, linear in k)
                xs = [self._features(m, r.n, r.k, server) for r in runs]
                ys = [r.per_party.get(key, {}).get(m, 0.0) for r in runs]
                self.coef[(key[0], key[1], m)] = _fit(xs, ys)
        hx = [[1.0, r.k] if self.vary_k else [1.0] for r in runs]
        self.hops = _fit(hx, [r.hops for r in runs])
        # wall = S + CPU / cores + hops * rtt / 2 (the predicted CPU carries the n and k scaling)
        self.cores = min(r.cores for r in runs)
        self.wall_s0 = float(
            np.median([r.wall - r.cpu / r.cores - r.hops * r.rtt / 2 for r in runs])
        )
        # on dedicated hosts: the busiest party's CPU per step, steps in sequence
        self.crit = _fit([self._x(r.n, r.k, True) for r in runs], [r.crit_cpu for r in runs])

    def _features(self, metric: str, n: float, k: float, server: bool) -> list[float]:
        if metric == "msgs_sent":  # batched: constant in n, one per peer server
            return [1.0, float(k)] if self.vary_k else [1.0]
        return self._x(n, k, server)

    def _x(self, n: float, k: float, server: bool) -> list[float]:
        x = [1.0, float(n)] if self.vary_n else [1.0]
        if self.vary_k:  # servers forward and prove k lists; clients submit to k servers
            x.append(float(n) * k)
        return x

    def _totals(self, n: float, k: int, t: float) -> dict[str, float]:
        out = dict.fromkeys(METRICS, 0.0)
        for (role, phase, m), c in self.coef.items():
            server = role in SERVER_ROLES
            per = max(0.0, float(np.dot(self._features(m, n, k, server), c)))
            if phase == "mix.decrypt":
                per *= t / self.t_fit
            parties = k if server else (self.clients if role == "client" else 1.0)
            out[m] += per * parties
        return out

    def predict(self, n: int, k: int | None = None, t: int | None = None, rtt: float = 0.0) -> dict:
        """Predicted totals of one run with n users, k servers, threshold t, round trip rtt."""
        k = int(k if k is not None else self.runs[0].k)
        t = int(t if t is not None else self.t_fit)
        out = self._totals(n, k, t)
        hops = float(np.dot([1.0, k] if self.vary_k else [1.0], self.hops))
        return {
            "n": n,
            "k": k,
            "t": t,
            "rtt_ms": rtt * 1e3,
            "cpu_s": out["cpu_s"],
            "bytes": out["bytes_sent"],
            "messages": out["msgs_sent"],
            "one_way_hops": hops,
            "round_trips": hops / 2,
            "wall_s": self.wall_s0 + out["cpu_s"] / self.cores + hops * rtt / 2,
            "critical_cpu_s": float(np.dot(self._x(n, k, True), self.crit)),
            "wall_dedicated_s": float(np.dot(self._x(n, k, True), self.crit)) + hops * rtt / 2,
        }

    def describe(self) -> dict[str, Any]:
        """Fitted coefficients by name (per role/phase and metric, non-zero ones)."""
        names = ["const"] + ["per_user"] * self.vary_n + ["per_user_per_server"] * self.vary_k
        per_elem: dict[str, dict[str, float]] = {}
        for (role, phase, m), c in self.coef.items():
            cols = ["const", "per_server"][: len(c)] if m == "msgs_sent" else names
            for name, v in zip(cols, c):
                if v > 0 and name != "const":
                    per_elem.setdefault(f"{role}/{phase}", {})[f"{m}_{name}"] = float(v)
        return {
            "protocol": self.protocol,
            "shuffler": self.shuffler,
            "runs": [r.name for r in self.runs],
            "per_user": per_elem,
            "hops": self.hops.tolist(),
            "wall_startup_s": self.wall_s0,
            "cores": self.cores,
            "critical_cpu": self.crit.tolist(),
        }


def validate(model: CostModel, runs: list[RunFacts]) -> list[dict[str, Any]]:
    """Predicted vs measured for held-out runs (relative errors)."""
    rows = []
    for r in runs:
        p = model.predict(r.n, r.k, r.t, r.rtt)
        row: dict[str, Any] = {"run": r.name, "n": r.n, "k": r.k, "rtt_ms": r.rtt * 1e3}
        for m, meas in (("cpu_s", r.cpu), ("bytes", r.bytes), ("wall_s", r.wall)):
            row[m] = {
                "predicted": p[m],
                "measured": meas,
                "error": p[m] / meas - 1 if meas else None,
            }
        row["one_way_hops"] = {"predicted": p["one_way_hops"], "measured": r.hops}
        rows.append(row)
    return rows


def parse_config(text: str) -> dict[str, float]:
    """``n=1e6,k=5,t=3,rtt=50ms`` -> predict() arguments."""
    out: dict[str, float] = {}
    for item in filter(None, text.split(",")):
        key, _, val = item.partition("=")
        val = val.strip().lower()
        if key == "rtt":
            out["rtt"] = float(val[:-2]) / 1e3 if val.endswith("ms") else float(val.rstrip("s"))
        elif key in ("n", "k", "t"):
            out[key] = int(float(val))
        else:
            raise ValueError(f"--predict: unknown key {key!r} (n, k, t, rtt)")
    if "n" not in out:
        raise ValueError("--predict needs n=")
    return out


def model_main(
    runs: list[Path], predict: list[str], as_json: bool, held_out: list[Path] | None = None
) -> int:
    """Fit, validate and predict; prints JSON or a table."""
    import sys

    try:
        model = CostModel([run_facts(r) for r in runs])
        configs = [parse_config(p) for p in predict]
        held = [run_facts(r) for r in held_out or []]
        val = validate(model, held)
    except (ValueError, KeyError, OSError) as exc:
        print(f"sdp costs --model: {exc}", file=sys.stderr)
        return 2
    preds = [model.predict(**c) for c in configs]  # type: ignore[arg-type]
    loaded = [r for r in model.runs + held if r.under_load]
    for r in loaded:
        use = "held out" if r in held else "fitted on"
        print(
            f"sdp costs --model: WARNING: {use} {r.name}, measured under load "
            f"({r.load_reason}): its wall times include contention, so the model's wall "
            "predictions do not hold for a quiet machine",
            file=sys.stderr,
        )
    out = {"model": model.describe(), "validation": val, "predictions": preds,
           "measured_under_load": [r.name for r in loaded]}  # fmt: skip
    if as_json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"model of {model.protocol} via {model.shuffler} from {len(runs)} runs")
    for v in val:
        cells = "  ".join(
            f"{m} {v[m]['predicted']:.3g}/{v[m]['measured']:.3g} ({v[m]['error']:+.0%})"
            for m in ("cpu_s", "bytes", "wall_s")
            if v[m]["error"] is not None
        )
        print(f"  held out {v['run']} (n={v['n']}, k={v['k']}, rtt={v['rtt_ms']:g} ms): {cells}")
    for p in preds:
        print(
            f"  n={p['n']} k={p['k']} t={p['t']} rtt={p['rtt_ms']:g} ms: cpu {p['cpu_s']:.4g} s, "
            f"bytes {p['bytes']:.4g}, messages {p['messages']:.4g}, "
            f"round trips {p['round_trips']:.3g}, wall {p['wall_s']:.4g} s (this machine), "
            f"{p['wall_dedicated_s']:.4g} s (dedicated hosts)"
        )
    return 0
