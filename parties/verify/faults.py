"""What happened to a run with faults, in plain words, from signed evidence only.

``sdp verify`` says which parties dropped out and when (the last thing their signed transcript
shows), which were late (a receiver signed a ``missed`` entry: it stopped waiting for them),
how many users the published guarantee counts and how the privacy gate accounted for them (the
analyzer's signed privacy statement), and, for a run the gate refused, that nothing was
published and why (the analyzer's signed ``close`` reason).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parties.verify.transcripts import CONTROL_TYPES, Transcript

GATE_REFUSED = "privacy gate refused"


def gate_refusal(transcripts: dict[str, Transcript], roles: dict[str, str]) -> str | None:
    """The reason the privacy gate refused, if the analyzer signed it closed its transcript
    with such a refusal and published no estimate; else None."""
    for name, t in transcripts.items():
        if roles.get(name) != "analyzer" or t.unsigned_tail:
            continue
        if any(e["dir"] == "publish" and e.get("ty") == "estimate" for e in t.entries):
            continue
        for e in t.entries:
            if e["dir"] == "close" and e.get("status") == "aborted":
                reason = str(e.get("reason", ""))
                if GATE_REFUSED in reason:
                    return reason
    return None


def _dropout(name: str, t: Transcript | None) -> str:
    """How ``name`` (not closed cleanly) ended, by the last thing its signed transcript shows."""
    if t is None:
        return f"{name} did not take part (no transcript)"
    closes = [e for e in t.entries if e["dir"] == "close"]
    how = (
        f"stopped (closed its transcript as {closes[-1].get('status')}: "
        f"{str(closes[-1].get('reason', ''))[:200]})"
        if closes
        else "dropped out"
    )
    sends = [e for e in t.entries if e["dir"] == "send" and e.get("ty") not in CONTROL_TYPES]
    reports = [e for e in t.entries if e["dir"] == "publish" and e.get("ty") == "data-report"]
    if sends:
        last = sends[-1]
        return (
            f"{name} {how} after sending {len(sends)} message(s) (last: {last['ty']!r} "
            f"to {last.get('peer')}, phase {last.get('ph')} round {last.get('rd')})"
        )
    if reports:
        return f"{name} {how} after its data report, before sending anything"
    return f"{name} {how} before sending anything"


def _refused_with(t: Transcript | None, refusal: str | None) -> bool:
    """``t`` closed as aborted because of the gate's refusal (its own or relayed)."""
    return (
        refusal is not None
        and t is not None
        and any(e["dir"] == "close" and GATE_REFUSED in str(e.get("reason", "")) for e in t.entries)
    )


def _late_arrivals(transcripts: dict[str, Transcript]) -> list[str]:
    """Messages a receiver logged after it had signed that a wait for them ran out (the
    protocol may have waited again, ``parties.runtime.receive``, or left them out)."""
    out = []
    for receiver, t in transcripts.items():
        gave_up: dict[tuple[str, str], int] = {}
        for e in t.entries:
            if e["dir"] == "missed":
                gave_up.setdefault((e["peer"], e["ty"]), e["i"])
            elif e["dir"] == "recv" and (e["peer"], e["ty"]) in gave_up:
                out.append(
                    f"{e['peer']} was late: its {e['ty']!r} reached {receiver} (entry {e['i']}) "
                    f"only after {receiver} had signed that a wait for it ran out (entry "
                    f"{gave_up[(e['peer'], e['ty'])]})"
                )
                del gave_up[(e["peer"], e["ty"])]
    return out


def _privacy(run_dir: Path, analyzer: Transcript) -> dict[str, Any] | None:
    from parties.runtime import codec

    pubs = [e for e in analyzer.entries if e["dir"] == "publish" and e.get("ty") == "privacy"]
    if len(pubs) != 1:
        return None
    path = run_dir / "transcripts" / f"{analyzer.party}.blobs" / str(pubs[0]["dg"])
    try:
        obj = codec.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def _users_counted(privacy: dict[str, Any], declared: int | None) -> list[str]:
    """One sentence per distinct (users received, users accounted, re-accounted) of the
    published releases."""
    seen: list[tuple[Any, Any, Any]] = []
    for r in privacy.get("releases", []):
        if isinstance(r, dict) and "n_received" in r:
            key = (r.get("n_received"), r.get("n_accounted"), bool(r.get("reaccounted")))
            if key not in seen:
                seen.append(key)
    eps = (privacy.get("total") or {}).get("eps")
    eps = f"{eps:.4g}" if isinstance(eps, (int, float)) else "unknown"
    out = []
    for received, accounted, reaccounted in seen:
        of = f" of {declared:,}" if isinstance(declared, int) else ""
        counted = f"{received:,}{of} users counted" if isinstance(received, int) else ""
        if reaccounted:
            how = f"the gate re-accounted the guarantee for the users received (total eps {eps})"
        elif isinstance(accounted, int) and isinstance(received, int) and accounted < received:
            how = (
                f"the guarantee was accounted for {accounted:,} users (min_users; total eps "
                f"{eps}), which the users received meet"
            )
        else:
            how = f"the guarantee is the one accounted for them (total eps {eps})"
        out.append(f"{counted}; {how}" if counted else how)
    return out


def what_happened(
    run_dir: Path,
    cluster: dict[str, Any],
    transcripts: dict[str, Transcript],
    clean: frozenset[str],
    late: list[str],
    refusal: str | None,
) -> list[str]:
    """Plain sentences on the run's dropouts, late parties, users counted and gate (empty for
    a run in which every party closed cleanly and nobody was late)."""
    names = [p["name"] for p in cluster["party"]]
    roles = {p["name"]: p["role"] for p in cluster["party"]}
    out = [
        _dropout(n, transcripts.get(n))
        for n in names
        if n not in clean and not _refused_with(transcripts.get(n), refusal)
    ]
    out += late + _late_arrivals(transcripts)
    analyzer = next((transcripts[n] for n in names if n in transcripts and roles[n] == "analyzer"),
                    None)  # fmt: skip
    privacy = _privacy(run_dir, analyzer) if analyzer is not None else None
    declared = cluster.get("run", {}).get("params", {}).get("users")
    declared = declared if isinstance(declared, int) else None
    if privacy is not None:
        short = any(
            isinstance(r, dict) and isinstance(r.get("n_received"), int)
            and declared is not None and r["n_received"] < declared
            for r in privacy.get("releases", [])
        )  # fmt: skip
        if out or short:  # users missing: say how many were counted, and how
            out += _users_counted(privacy, declared)
    if refusal is not None:
        out.append(f"the run was refused and nothing was published: {refusal}")
    return out
