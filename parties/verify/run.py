"""``sdp verify RUN_DIR``: check every transcript chain and signature, cross-party consistency,
and the protocol's published result.

The transcript checks are in :mod:`parties.verify.transcripts`; protocol-specific checks (proofs
of shuffle, decryption proofs, recomputing the estimate) register in ``PROTOCOL_CHECKS`` and are
imported by name, so this command imports no role.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomllib

from parties.verify.transcripts import (
    Check,
    Report,
    Transcript,
    check_consistency,
    check_transcript,
    public_key,
)

ProtocolCheck = Callable[[Path, dict[str, Any], dict[str, Transcript], Report], None]
PROTOCOL_CHECKS: dict[str, str] = {
    "trusted": "parties.verify.shuffle:check_published_estimate",
    "mixnet": "parties.verify.mixnet:check_mixnet_run",
    "mpc": "parties.verify.shuffle:check_mpc_run",
    "txpub": "parties.verify.txpub:check_txpub_run",
}


def _protocol_check(cluster: dict[str, Any]) -> ProtocolCheck | None:
    import importlib

    run = cluster.get("run", {})
    ref = PROTOCOL_CHECKS.get(run.get("protocol", "")) or PROTOCOL_CHECKS.get(
        run.get("shuffler", "")
    )
    if ref is None:
        return None
    mod, fn = ref.split(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except ModuleNotFoundError:
        return None


def verify_run(run_dir: Path, progress: bool = True) -> Report:
    """All checks of a run directory."""
    run_dir = Path(run_dir)
    report = Report()
    try:
        cluster = tomllib.loads((run_dir / "cluster.toml").read_text())
        session = bytes.fromhex(cluster["run"]["session"])
        names = [p["name"] for p in cluster["party"]]
    except (OSError, ValueError, KeyError, tomllib.TOMLDecodeError) as exc:
        report.add(Check("run directory", False, 0, f"cluster.toml unreadable: {exc}"))
        return report
    keys = {}
    for n in names:
        try:
            keys[n] = public_key(run_dir / "keys" / f"{n}.crt", n)
        except (OSError, ValueError) as exc:
            report.add(Check("certificates", False, len(names), f"{n}: {exc}"))
            return report
    report.add(Check("certificates", True, len(names), "one Ed25519 certificate per party"))
    total = 0
    for n in names:
        p = run_dir / "transcripts" / f"{n}.jsonl"
        if p.exists():
            with open(p, "rb") as f:
                total += sum(1 for _ in f)
    bar = None
    tick = None
    if progress and sys.stderr.isatty() and total > 5000:
        from rich.progress import Progress

        bar = Progress(transient=True)
        bar.start()
        task = bar.add_task("verifying transcripts", total=total)

        def tick() -> None:
            bar.advance(task)

    transcripts: dict[str, Transcript] = {}
    failure = None
    entries = 0
    aborted = (run_dir / "ABORTED.json").exists()
    faulted: frozenset[str] = frozenset()
    try:
        faulted = frozenset(json.loads((run_dir / "result.json").read_text()).get("faults", {}))
    except (OSError, ValueError):
        pass
    try:
        for n in names:
            t, err = check_transcript(
                run_dir, n, session, keys[n], tick, allow_unsigned_tail=n in faulted
            )
            if t.unsigned_tail:
                report.warnings.append(
                    f"{n} failed during the run: its last {t.unsigned_tail} "
                    "transcript entries are not signed and were ignored"
                )
            if err and aborted and "missing" in err:
                report.warnings.append(err + " (aborted run)")
                continue
            entries += len(t.entries)
            if err:
                failure = err
                break
            transcripts[n] = t
    finally:
        if bar is not None:
            bar.stop()
    report.add(
        Check(
            "transcript chains and signatures",
            failure is None,
            entries,
            failure
            or f"{len(transcripts)} transcripts, {entries} entries, "
            "hash chains intact, checkpoints signed",
        )
    )
    if failure:
        return report
    report.add(check_consistency(transcripts, report, faulted))
    if aborted:
        report.add(
            Check(
                "run completed",
                False,
                0,
                "the run was aborted (ABORTED.json): transcripts checked, nothing was published",
            )
        )
        return report
    check = _protocol_check(cluster)
    if check is not None:
        try:
            check(run_dir, cluster, transcripts, report)
        except Exception as exc:  # a check must not crash the verifier
            report.add(Check("protocol checks", False, 0, f"{type(exc).__name__}: {exc}"))
    else:
        report.warnings.append("no protocol-specific checks for this run kind")
    return report


def main(argv: list[str]) -> int:
    """Entry of ``sdp verify``."""
    ap = argparse.ArgumentParser(prog="sdp verify", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        print(f"sdp verify: {run_dir} is not a directory", file=sys.stderr)
        return 2
    report = verify_run(run_dir, progress=not args.json)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": report.ok,
                    "first_failure": report.first_failure,
                    "checks": [c.__dict__ for c in report.checks],
                    "warnings": report.warnings,
                },
                indent=1,
            )
        )
    else:
        from rich.table import Table

        from parties.runtime.ui import console

        tab = Table(title=f"verification of {run_dir}")
        for c in ("check", "result", "count", "detail"):
            tab.add_column(c)
        for c in report.checks:
            tab.add_row(
                c.name, "[green]pass[/]" if c.ok else "[red]FAIL[/]", str(c.count), c.detail
            )
        con = console()
        con.print(tab)
        for w in report.warnings:
            con.print(f"[yellow]warning:[/] {w}")
        con.print("[green]verified[/]" if report.ok else f"[red]FAILED[/]: {report.first_failure}")
    return 0 if report.ok else 1
