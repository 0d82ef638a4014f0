"""``sdp verify`` checks of two-site transaction-publisher runs.

The secure computation is two-party and semi-honest (Paillier, spec 001): its correctness cannot
be re-derived from the public transcript (the site data stay private). What is checked beyond
the generic chains, signatures and cross-party consistency: site A published exactly one
estimate, it equals result.json, the LM iterations logged in the transcripts match the reported
count, and B's published sample counts are what A published for B's items.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mpc.mixnet.report import UNNUMBERED
from parties.runtime import codec
from parties.verify.shuffle import _blob, _close
from parties.verify.transcripts import Check, Report, Transcripts


def check_txpub_run(
    run_dir: Path, cluster: dict[str, Any], transcripts: Transcripts, report: Report, *_: object
) -> None:  # ``*_``: a ProtocolCheck's pool, unused (no proof checks here)
    """Published counts vs result.json and the wire; iterations vs the transcript."""
    a, b = transcripts.get("A"), transcripts.get("B")
    if a is None or b is None:
        report.add(
            Check(UNNUMBERED, "txpub parties", False, 0, "transcripts of A and B are required")
        )
        return
    pubs = [e for e in a.entries if e["dir"] == "publish" and e["ty"] == "estimate"]
    if len(pubs) != 1:
        report.add(
            Check(
                UNNUMBERED,
                "published counts",
                False,
                len(pubs),
                f"A published {len(pubs)} estimates (expected 1)",
            )
        )
        return
    published = codec.loads(_blob(run_dir, "A", pubs[0]["dg"]))
    res = json.loads((run_dir / "result.json").read_text())
    same = _close(res.get("estimate"), published)
    report.add(
        Check(
            UNNUMBERED,
            "result.json",
            same,
            1,
            "counts equal A's published artifact"
            if same
            else "result.json differs from A's published artifact",
        )
    )
    samples = [
        codec.loads(_blob(run_dir, "B", e["dg"]))
        for e in b.entries
        if e["dir"] == "send" and e["ty"] == "txpub.sample" and e["pub"]
    ]
    if len(samples) == 1:
        counts_b = codec.obj_to_array(samples[0]["counts"]).tolist()
        tail = published["counts"][-len(counts_b) :]
        ok = _close([float(x) for x in tail], [float(x) for x in counts_b])
        report.add(
            Check(
                UNNUMBERED,
                "B's sample",
                ok,
                len(counts_b),
                "A published B's counts as B sent them"
                if ok
                else "A's published counts for B's items differ from B's sample",
            )
        )
    iters = {e["rd"] for e in a.entries if e["dir"] in ("send", "recv") and e["ph"] == "lm"}
    reported = (res.get("lm") or {}).get("iterations")
    if reported is not None:
        ok = len(iters) >= int(reported)
        report.add(
            Check(
                UNNUMBERED,
                "LM iterations",
                ok,
                len(iters),
                f"{len(iters)} LM rounds on the wire, {reported} reported",
            )
        )
    report.warnings.append(
        "txpub: the secure LM is semi-honest two-party computation; the "
        "counts' optimality is checked by the launcher against the "
        "centralized reference (evaluation), not provable from transcripts"
    )
