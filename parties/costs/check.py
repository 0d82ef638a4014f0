"""Cross-check a run's cost ledger against its transcripts: per party, peer and ledger row
(phase, protocol round, step), the payload bytes and message counts the ledger holds must equal
the sum of ``len`` and the count of the transcript's send / recv entries."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from parties.runtime.cost_ledger import is_step_phase


def transcript_sums(path: Path) -> tuple[Counter, Counter]:
    """(payload bytes, messages) keyed by (dir, peer, phase, protocol round, step)."""
    size: Counter = Counter()
    count: Counter = Counter()
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if e.get("dir") not in ("send", "recv"):
                continue
            step = e["rd"] if is_step_phase(e["ph"]) else 0
            pr = e.get("pr", 0 if is_step_phase(e["ph"]) else e["rd"])
            key = (e["dir"], e["peer"], e["ph"], pr, step)
            size[key] += e["len"]
            count[key] += 1
    return size, count


def ledger_sums(ledger: dict[str, Any]) -> tuple[Counter, Counter]:
    """The same sums from one party's ledger (``costs/PARTY.json``)."""
    size: Counter = Counter()
    count: Counter = Counter()
    for row in ledger["rows"]:
        for peer, c in row.get("peers", {}).items():
            for d, suffix in (("send", "sent"), ("recv", "recv")):
                key = (d, peer, row["phase"], row["round"], row["step"])
                if c[f"payload_{suffix}"]:
                    size[key] += c[f"payload_{suffix}"]
                if c[f"msgs_{suffix}"]:
                    count[key] += c[f"msgs_{suffix}"]
    return size, count


def check_ledger(run_dir: Path) -> list[str]:
    """Disagreements between ledger and transcripts (empty: they agree), one line each."""
    run_dir = Path(run_dir)
    problems = []
    for lf in sorted((run_dir / "costs").glob("*.json")):
        party = lf.stem
        tpath = run_dir / "transcripts" / f"{party}.jsonl"
        if not tpath.exists():
            problems.append(f"{party}: ledger without transcript")
            continue
        ls, lc = ledger_sums(json.loads(lf.read_text()))
        ts, tc = transcript_sums(tpath)
        for what, a, b in (("bytes", ls, ts), ("messages", lc, tc)):
            for key in sorted(set(a) | set(b), key=str):
                if a[key] != b[key]:
                    problems.append(f"{party} {key}: ledger {what} {a[key]} != transcript {b[key]}")
    return problems
