"""``sdp verify RUN_DIR``: check every transcript chain and signature, cross-party consistency,
and the protocol's published result.

The transcript checks are in :mod:`parties.verify.transcripts`; protocol-specific checks (proofs
of shuffle, decryption proofs, recomputing the estimate) register in ``PROTOCOL_CHECKS`` and are
imported by name, so this command imports no role.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomllib

from mpc.mixnet.report import UNNUMBERED
from parties.runtime.cluster import cluster_digest, load_cluster
from parties.runtime.keys import ONE_PROCESS, PER_HOST
from parties.verify.faults import gate_refusal, what_happened
from parties.verify.incarnations import check_incarnations, crashed_files, restart_line
from parties.verify.transcripts import (
    Check,
    Report,
    Transcript,
    cert_fingerprint,
    check_consistency,
    check_transcript,
    public_key,
)

if TYPE_CHECKING:
    from parties.runtime.pools import OpenPool

# (run directory, cluster file, transcripts, report, pool the proof checks may run on)
ProtocolCheck = Callable[[Path, dict[str, Any], dict[str, Transcript], Report, Any], None]
# protocol-specific checks; every other run is checked by its shuffler backend's
# ``verify_check`` (``parties.runtime.backend``)
PROTOCOL_CHECKS: dict[str, str] = {"txpub": "parties.verify.txpub:check_txpub_run"}


def _protocol_check(cluster: dict[str, Any]) -> ProtocolCheck | None:
    import importlib

    from parties.runtime.backend import backends

    run = cluster.get("run", {})
    b = backends().get(run.get("shuffler", ""))
    ref = PROTOCOL_CHECKS.get(run.get("protocol", "")) or (b.verify_check if b else None)
    if ref is None:
        return None
    mod, fn = ref.split(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except ModuleNotFoundError:
        return None


# What a party of a tolerated role may have published before it dropped out: nothing relies on
# it, so its publisher need not have closed cleanly (a client's signed data report).
DROPOUT_PUBLISHES = frozenset({"data-report"})


ONE_PROCESS_WARNING = (
    "one-process anchor: every party's key was made by one process (sdp run, or sdp cluster "
    "init without --certs), so whoever ran cluster init could forge every transcript; the "
    "checks prove consistency, not who signed; for an independent anchor each host makes its "
    "own key (sdp keygen) and cluster init pins the certificates (--certs)"
)


def anchor_kind(trust: dict[str, Any]) -> str:
    """``per-host`` or ``one-process`` (a trust file without ``anchor`` predates per-host keys:
    its keys were all made by one process)."""
    return PER_HOST if trust.get("anchor") == PER_HOST else ONE_PROCESS


def load_trust(path: Path) -> dict[str, Any]:
    """A trust anchor: ``trust.json`` (or a party directory holding one)."""
    if path.is_dir():
        path = path / "trust.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"trust file {path} unreadable: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("fingerprints"), dict):
        raise ValueError(f"trust file {path}: expected {{session, cluster_sha256, fingerprints}}")
    return doc


def _certificates(
    run_dir: Path, names: list[str], trust: dict[str, Any] | None, report: Report
) -> dict[str, Any] | None:
    """Every party's public key, checked against the trust anchor when one is given."""
    keys = {}
    for n in names:
        path = run_dir / "certs" / f"{n}.crt"
        try:
            keys[n] = public_key(path, n)
        except (OSError, ValueError) as exc:
            report.add(Check("V-2", "certificates", False, len(names), f"{n}: {exc}"))
            return None
        if trust is not None:
            want = trust["fingerprints"].get(n)
            got = cert_fingerprint(path)
            if want != got:
                report.add(
                    Check(
                        "V-2",
                        "certificates",
                        False,
                        len(names),
                        f"{n}: certificate fingerprint {got[:16]}... is not the trusted "
                        f"{str(want)[:16]}... (replaced certificate?)",
                    )
                )
                return None
    if trust is None:
        report.trust = "run directory (not independent)"
        report.anchor = "run directory"
        report.warnings.append(
            "certificates were taken from the run directory itself: whoever holds the run "
            "directory could have replaced them; pass --trust TRUST.json (from sdp cluster init, "
            "or RUN_DIR.trust.json written by sdp run) for an independent check"
        )
        detail = "one Ed25519 certificate per party, TRUSTED FROM THE RUN DIRECTORY"
    else:
        report.trust = "trust anchor"
        report.anchor = anchor_kind(trust)
        detail = "one Ed25519 certificate per party, fingerprints match the trust anchor"
        if report.anchor == PER_HOST:
            detail += f"; trust anchor: per-host keys ({len(names)} parties)"
        else:
            detail += "; ONE-PROCESS ANCHOR"
            report.warnings.append(ONE_PROCESS_WARNING)
    report.add(Check("V-2", "certificates", True, len(names), detail))
    return keys


def verify_run(
    run_dir: Path,
    progress: bool = True,
    trust: dict[str, Any] | None = None,
    pool: OpenPool | None = None,
) -> Report:
    """All checks of a run directory; ``trust`` (a trust document) pins the certificates;
    ``pool`` (``sdp verify --pool``) runs the proof checks, else a local pool of every core."""
    run_dir = Path(run_dir)
    report = Report()
    try:
        cluster = tomllib.loads((run_dir / "cluster.toml").read_text())
        session = bytes.fromhex(cluster["run"]["session"])
        names = [p["name"] for p in cluster["party"]]
        digest = cluster_digest(load_cluster(run_dir / "cluster.toml"))
    except (OSError, ValueError, KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
        report.add(Check("V-1", "run directory", False, 0, f"cluster.toml unreadable: {exc}"))
        return report
    if trust is not None and (
        trust.get("session") != session.hex() or trust.get("cluster_sha256") != digest
    ):
        report.add(
            Check(
                "V-1",
                "run directory",
                False,
                0,
                "cluster.toml is not the cluster of the trust anchor (session or content differ)",
            )
        )
        return report
    keys = _certificates(run_dir, names, trust, report)
    if keys is None:
        return report
    total = 0
    for n in names:
        for p in [run_dir / "transcripts" / f"{n}.jsonl", *crashed_files(run_dir, n)]:
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
    entries = crashed = 0
    try:
        for n in names:
            if not (run_dir / "transcripts" / f"{n}.jsonl").exists():
                if crashed_files(run_dir, n):
                    failure = f"{n}: crashed transcripts but no transcript of its last incarnation"
                    break
                report.warnings.append(f"{n} left no transcript (it did not take part)")
                continue
            t, err = check_transcript(run_dir, n, session, keys[n], tick, allow_unsigned_tail=True)
            if err:
                failure = err
                break
            if t.cluster != digest:
                failure = (
                    f"{n} entry 0: the transcript was opened for another cluster "
                    f"(recorded {t.cluster[:16] or 'nothing'}..., cluster.toml gives "
                    f"{digest[:16]}...): cluster.toml was changed after the run"
                )
                break
            failure = check_incarnations(run_dir, t, session, keys[n], digest, tick)
            if failure:
                break
            if t.unsigned_tail:
                report.warnings.append(
                    f"{n} did not finish: its last {t.unsigned_tail} transcript entries are not "
                    "signed and were ignored"
                )
            entries += len(t.entries)
            crashed += sum(len(c.entries) for c in t.crashed)
            transcripts[n] = t
    finally:
        if bar is not None:
            bar.stop()
    report.warnings += [restart_line(t, transcripts) for t in transcripts.values() if t.crashed]
    report.add(
        Check(
            "V-3",
            "transcript chains and signatures",
            failure is None,
            entries,
            failure
            or f"{len(transcripts)} transcripts, {entries} entries"
            + (f" (and {crashed} of crashed incarnations)" if crashed else "")
            + ", hash chains intact, checkpoints signed, cluster file as recorded",
        )
    )
    if failure:
        return report
    clean = frozenset(n for n, t in transcripts.items() if t.closed_cleanly)
    not_clean = sorted(set(names) - clean)
    roles = {p["name"]: p["role"] for p in cluster["party"]}
    # roles whose failure a published run tolerates, by its shuffler backend (evidence: a
    # transcript without a signed clean close); everyone else must have closed cleanly
    from parties.runtime.plans import tolerated_roles

    may_fail = tolerated_roles(
        cluster["run"].get("protocol", ""), cluster["run"].get("shuffler", "")
    )
    needed = [n for n in not_clean if roles.get(n) not in may_fail]
    published = (run_dir / "result.json").exists()
    status_ok = not (published and needed)
    report.add(
        Check(
            "V-4",
            "party status (signed)",
            status_ok,
            len(clean),
            f"{len(clean)} of {len(names)} parties closed cleanly"
            + (f"; did not: {', '.join(not_clean)}" if not_clean else "")
            + (
                ""
                if status_ok
                else f" -- a published run needs {', '.join(needed)} (role "
                f"{', '.join(sorted({roles[n] for n in needed}))}) to have closed cleanly; "
                "its transcript has no signed clean close (truncated, or the party crashed)"
            ),
        )
    )
    if not status_ok:
        return report
    try:
        report.add(check_consistency(transcripts, report, clean))
    except (TypeError, AttributeError) as exc:  # a signed entry with a field of the wrong type
        report.add(
            Check("V-5", "cross-party consistency", False, 0, f"malformed transcript entry: {exc}")
        )
        return report
    publishers = sorted(
        n
        for n, t in transcripts.items()
        if any(
            e["dir"] == "publish"
            and not (roles.get(n) in may_fail and e.get("ty") in DROPOUT_PUBLISHES)
            for e in t.entries
        )
    )
    # only a published run relies on what its parties published (a refused or aborted run is
    # decided by V-7; its earlier rounds' publications passed their gate, spec 05 M-3)
    bad_pub = [n for n in publishers if n not in clean] if published else []
    if bad_pub or (published and not publishers):
        report.add(
            Check(
                "V-6",
                "publication",
                False,
                len(publishers),
                f"{', '.join(bad_pub)} published but did not close its transcript cleanly"
                if bad_pub
                else "result.json exists but no party's signed transcript published anything",
            )
        )
        return report
    refusal = gate_refusal(transcripts, roles)
    happened = what_happened(run_dir, cluster, transcripts, clean, report.late, refusal)
    if happened:
        report.add(Check("V-7", "what happened", True, len(happened), "; ".join(happened)))
    aborted = (run_dir / "ABORTED.json").exists()
    if refusal is not None and not published:
        report.add(Check("V-7", "run completed", True, 0, f"refused, nothing published: {refusal}"))
        return report
    if aborted or not published:
        from parties.verify.mpc_outputs import check_mpc_abort_evidence

        check_mpc_abort_evidence(run_dir, cluster, transcripts, report)  # V-31: who deviated
        report.add(
            Check(
                "V-7",
                "run completed",
                False,
                0,
                "the run was aborted (ABORTED.json): transcripts checked, nothing was published"
                if aborted
                else "no result.json: nothing was published",
            )
        )
        return report
    _privacy_marking(cluster, report)
    check = _protocol_check(cluster)
    if check is not None:
        try:
            check(run_dir, cluster, transcripts, report, pool)
        except Exception as exc:  # a check must not crash the verifier
            report.add(
                Check(UNNUMBERED, "protocol checks", False, 0, f"{type(exc).__name__}: {exc}")
            )
    else:
        report.warnings.append("no protocol-specific checks for this run kind")
    return report


def _privacy_marking(cluster: dict[str, Any], report: Report) -> None:
    """A run whose client randomness is seeded from the public cluster file has no privacy."""
    seed = cluster.get("run", {}).get("params", {}).get("seed")
    if seed is None:
        report.add(
            Check(
                "V-8",
                "privacy",
                True,
                0,
                "client randomness private (CSPRNG-seeded at each client)",
            )
        )
        return
    report.add(
        Check(
            "V-8",
            "privacy",
            True,
            0,
            f"SIMULATION WITHOUT PRIVACY: seed {seed} is in the public cluster file, so every "
            "user's local noise can be recomputed from the run directory",
        )
    )
    report.warnings.append(
        f"seeded run (seed {seed}): a simulation without privacy, not a private release"
    )


def main(argv: list[str]) -> int:
    """Entry of ``sdp verify``."""
    from mpc.ristretto import backend, backend_line

    ap = argparse.ArgumentParser(prog="sdp verify", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument(
        "--trust",
        help="trust anchor: trust.json from sdp cluster init (or a party directory), or "
        "RUN_DIR.trust.json written by sdp run; without it the run directory's own "
        "certificates are trusted (and the report says so)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--pool",
        metavar="SPEC",
        help="where the proof checks run: 'local' (a process pool, the default) or "
        "'dask://HOST:PORT' (a Dask scheduler; docs/scale.md)",
    )
    args = ap.parse_args(argv)
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        print(f"sdp verify: {run_dir} is not a directory", file=sys.stderr)
        return 2
    try:
        trust = load_trust(Path(args.trust)) if args.trust else None
    except ValueError as exc:
        print(f"sdp verify: {exc}", file=sys.stderr)
        return 2
    if args.pool is not None:
        from parties.runtime.pools import PoolSpecError, open_pool

        try:
            pool = open_pool(args.pool, os.cpu_count() or 1)
        except PoolSpecError as exc:
            print(f"sdp verify: {exc}", file=sys.stderr)
            return 2
        try:
            report = verify_run(run_dir, progress=not args.json, trust=trust, pool=pool)
        finally:
            pool.close()
    else:
        report = verify_run(run_dir, progress=not args.json, trust=trust)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": report.ok,
                    "first_failure": report.first_failure,
                    "checks": [c.__dict__ for c in report.checks],
                    "warnings": report.warnings,
                    "trust": report.trust,
                    "anchor": report.anchor,
                    "group_backend": backend(),
                },
                indent=1,
            )
        )
    else:
        from rich.table import Table

        from parties.runtime.ui import console

        tab = Table(title=f"verification of {run_dir}")
        for c in ("spec", "check", "result", "count", "detail"):
            tab.add_column(c)
        for c in report.checks:
            verdict = "[green]pass[/]" if c.ok else "[red]FAIL[/]"
            tab.add_row(c.vid or "-", c.name, verdict, str(c.count), c.detail)
        con = console()
        con.print(tab)
        for w in report.warnings:
            con.print(f"[yellow]warning:[/] {w}")
        con.print("[green]verified[/]" if report.ok else f"[red]FAILED[/]: {report.first_failure}")
        con.print(backend_line())
    return 0 if report.ok else 1
