"""Protocol checks for shuffle runs: recompute the published estimate from the shuffled
multiset with the protocol's analyzer; state what the backend cannot prove."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from parties import codec
from parties.verify import Check, Report, Transcript


def _blob(run_dir: Path, party: str, digest: str) -> bytes:
    return (run_dir / "transcripts" / f"{party}.blobs" / digest).read_bytes()


def _close(a: Any, b: Any, rel: float = 1e-9) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rel) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return a == b


def recompute_estimate(
    run_dir: Path,
    cluster: dict[str, Any],
    analyzer: Transcript,
    input_type: str,
    report: Report,
    batches: dict[str, np.ndarray] | None = None,
) -> None:
    """Re-run the protocol's analyzer on the logged multiset; compare with what was published."""
    from protocols.base import validate_batches
    from protocols.workloads import get_workload

    pubs = [e for e in analyzer.entries if e["dir"] == "publish" and e["ty"] == "estimate"]
    if len(pubs) != 1:
        report.add(
            Check(
                "published estimate",
                False,
                len(pubs),
                f"{analyzer.party} published {len(pubs)} estimates (expected 1)",
            )
        )
        return
    published = codec.loads(_blob(run_dir, analyzer.party, pubs[0]["dg"]))
    if batches is None:
        ins = [e for e in analyzer.entries if e["dir"] == "recv" and e["ty"] == input_type]
        if len(ins) != 1 or not ins[0]["pub"]:
            report.add(
                Check(
                    "recompute estimate",
                    False,
                    len(ins),
                    f"{analyzer.party} has no single public {input_type!r} input",
                )
            )
            return
        obj = codec.loads(_blob(run_dir, analyzer.party, ins[0]["dg"]))
        batches = {k: codec.obj_to_array(v) for k, v in obj["batches"].items()}
    run = cluster["run"]
    workload = get_workload(run["protocol"], dict(run.get("params", {})))
    validate_batches(workload.protocol, batches)
    from parties.shuffle_roles import to_jsonable

    again = to_jsonable(workload.protocol.analyze(batches))
    n = sum(int(v.shape[0]) for v in batches.values())
    ok = _close(again, published)
    report.add(
        Check(
            "recompute estimate",
            ok,
            n,
            f"analyzer re-run on {n} shuffled messages "
            + (
                "matches the published estimate"
                if ok
                else f"DIFFERS from the published estimate ({analyzer.party} entry {pubs[0]['i']})"
            ),
        )
    )
    result_path = run_dir / "result.json"
    if result_path.exists():
        import json

        res = json.loads(result_path.read_text())
        same = _close(res.get("estimate"), published)
        report.add(
            Check(
                "result.json",
                same,
                1,
                "estimate equals the transcript's published artifact"
                if same
                else "result.json estimate differs from the published artifact",
            )
        )


def check_published_estimate(
    run_dir: Path, cluster: dict[str, Any], transcripts: dict[str, Transcript], report: Report
) -> None:
    """Trusted-shuffler runs: recompute the estimate; the shuffle itself is trusted."""
    analyzers = [p["name"] for p in cluster["party"] if p["role"] == "analyzer"]
    recompute_estimate(run_dir, cluster, transcripts[analyzers[0]], "shuffled", report)
    report.warnings.append(
        "trusted shuffler: the permutation is not verifiable (simulation "
        "backend); only channels, signatures and the estimate are checked"
    )


def check_mpc_run(
    run_dir: Path, cluster: dict[str, Any], transcripts: dict[str, Transcript], report: Report
) -> None:
    """MPC runs: the opened multiset and estimate are re-checked; the semi-honest shuffle is not
    provable from the transcript."""
    analyzers = [p["name"] for p in cluster["party"] if p["role"] == "analyzer"]
    recompute_estimate(run_dir, cluster, transcripts[analyzers[0]], "shuffled", report)
    report.warnings.append(
        "MPC shuffler (semi-honest, honest majority): the transcripts prove who "
        "sent what, not that the servers permuted correctly"
    )
