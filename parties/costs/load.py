"""Was the run measured on a busy machine? Host samples taken by every party's ledger, and the
verdict ``sdp costs`` prints and ``sdp costs --model`` warns on.

Every party samples its host when its ledger starts, at every phase change and when it closes
(:func:`host_sample`): the 1-minute load average, the host's CPU busy seconds since boot
(``/proc/stat``: user, nice, system, irq, softirq, steal; Linux) and the number of cores. The
verdict (:func:`load_verdict`) compares, per host, the CPU the host spent between the first
and the last sample of the run's parties with the CPU the run's own parties spent (their
ledgers' ``cpu_s``, pool workers included): what is left is other processes' CPU, *foreign*
load, in cores on average over the run. A run is *under load* when a host's foreign load
reaches :data:`FOREIGN_CORES_LIMIT` cores: then its wall times (and a cost model fitted on
them) measure the contention as much as the protocol. The load average is kept beside it for
readers (it counts runnable processes, the run's own included, averaged over a minute), but the
verdict rests on CPU seconds, which are exact and need no smoothing.
"""

from __future__ import annotations

from typing import Any

# a host whose other processes took half a core or more on average over the run is "under load"
FOREIGN_CORES_LIMIT = 0.5


def load_verdict(parties: list[dict[str, Any]]) -> dict[str, Any]:
    """{under_load, hosts: [{host, cores, parties, wall_s, host_cpu_s, run_cpu_s,
    foreign_cores, load1_max}], limit_cores, reason} from the parties' ledgers; ``under_load``
    is None when no ledger sampled its host (runs written before the ledger did)."""
    hosts: dict[str, dict[str, Any]] = {}
    for p in parties:
        host = p.get("host") or {}
        samples = [s for s in host.get("samples", []) if s.get("busy_s") is not None]
        if not samples:
            continue
        h = hosts.setdefault(
            host.get("name", "?"),
            {"cores": host.get("cores") or 1, "parties": 0, "first": None, "last": None,
             "run_cpu_s": 0.0, "load1_max": None},
        )  # fmt: skip
        h["parties"] += 1
        h["run_cpu_s"] += sum(r.get("cpu_s", 0.0) for r in p.get("rows", []))
        first, last = samples[0], samples[-1]
        if h["first"] is None or first["t"] < h["first"]["t"]:
            h["first"] = first
        if h["last"] is None or last["t"] > h["last"]["t"]:
            h["last"] = last
        loads = [s["load1"] for s in samples if s.get("load1") is not None]
        if loads:
            h["load1_max"] = max(loads + ([h["load1_max"]] if h["load1_max"] is not None else []))
    out = []
    for name, h in sorted(hosts.items()):
        wall = h["last"]["t"] - h["first"]["t"]
        host_cpu = h["last"]["busy_s"] - h["first"]["busy_s"]
        foreign = max(0.0, host_cpu - h["run_cpu_s"]) / wall if wall > 0 else 0.0
        out.append(
            {
                "host": name,
                "cores": h["cores"],
                "parties": h["parties"],
                "wall_s": round(wall, 3),
                "host_cpu_s": round(host_cpu, 3),
                "run_cpu_s": round(h["run_cpu_s"], 3),
                "foreign_cores": round(foreign, 3),
                "load1_max": h["load1_max"],
            }
        )
    if not out:
        return {"under_load": None, "hosts": [], "limit_cores": FOREIGN_CORES_LIMIT,
                "reason": "the ledgers hold no host samples (a run written before they did)"}  # fmt: skip
    busy = [h for h in out if h["foreign_cores"] >= FOREIGN_CORES_LIMIT]
    reason = (
        "; ".join(
            f"{h['host']}: other processes took {h['foreign_cores']:.2f} of {h['cores']} cores "
            f"on average over the run's {h['wall_s']:.1f} s"
            for h in (busy or out)
        )
    )
    return {"under_load": bool(busy), "hosts": out, "limit_cores": FOREIGN_CORES_LIMIT,
            "reason": reason}  # fmt: skip


def load_line(verdict: dict[str, Any]) -> str:
    """One line for the text views."""
    if verdict.get("under_load") is None:
        return "load: not recorded (ledgers without host samples)"
    if verdict["under_load"]:
        return (
            f"MEASURED UNDER LOAD ({verdict['reason']}): wall times include contention; "
            "do not fit or publish them as the protocol's"
        )
    return f"load: quiet ({verdict['reason']})"
