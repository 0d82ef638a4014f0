"""A party's incarnations, proven by its own signed transcripts (docs/transcript.md,
"Incarnations").

A party restarted after a crash keeps the transcript of each earlier incarnation as
``NAME.crashed-K.jsonl`` (K = 0, 1, ...) and opens ``NAME.jsonl`` as incarnation K + 1. The
verifier accepts incarnation K only if every earlier one is there and verifies as a transcript
of that party: hash chain, checkpoints signed with the party's own key, the run's session and
cluster, ``open.inc`` equal to its place in the sequence, and it ends where the process died
(signed entries, possibly followed by unsigned ones cut by the crash), never with a ``close``:
a party that closed its transcript has finished and is never restarted. A crashed incarnation
must not have sent a protocol message (a party that spoke cannot rejoin; the runtime refuses
it). Peers' claims (their ``rejoin`` entries) are checked against this in
``transcripts.check_consistency``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ed25519

from parties.verify.transcripts import Transcript, check_transcript

CRASHED = re.compile(r"\.crashed-(\d+)\.jsonl\Z")


def crashed_files(run_dir: Path, party: str) -> list[Path]:
    """Every ``PARTY.crashed-*.jsonl`` of the run directory (sorted by name)."""
    return sorted((Path(run_dir) / "transcripts").glob(f"{party}.crashed-*.jsonl"))


def check_incarnations(
    run_dir: Path,
    current: Transcript,
    session: bytes,
    key: ed25519.Ed25519PublicKey,
    cluster_digest: str,
    tick: Callable[[], None] | None = None,
) -> str | None:
    """Verify ``current``'s earlier incarnations and attach them (``current.crashed``);
    returns the first failure, or None. ``current`` is the party's verified ``NAME.jsonl``."""
    party = current.party
    files = crashed_files(run_dir, party)
    numbers = []
    for f in files:
        m = CRASHED.search(f.name)
        if m is None or f.name != f"{party}.crashed-{int(m.group(1))}.jsonl":
            return (
                f"{f.name}: not a crashed transcript name ({party}.crashed-K.jsonl, K = 0, 1, ...)"
            )
        numbers.append(int(m.group(1)))
    numbers.sort()
    if numbers != list(range(len(numbers))):
        return (
            f"{party}: crashed transcripts {numbers} are not incarnations 0..{len(numbers) - 1} "
            "(one missing or extra)"
        )
    if current.incarnation != len(numbers):
        return (
            f"{party} entry 0: incarnation {current.incarnation} is not backed by {party}'s "
            f"transcripts: {len(numbers)} crashed incarnation(s) "
            f"({', '.join(f.name for f in files) or 'none'}) prove incarnation {len(numbers)}"
        )
    crashed: list[Transcript] = []
    for k in numbers:
        name = f"{party}.crashed-{k}.jsonl"
        t, err = check_transcript(
            run_dir, party, session, key, tick, allow_unsigned_tail=True, filename=name
        )
        if err:
            return f"{err} (crashed incarnation {k} of {party})"
        if t.cluster != cluster_digest:
            return f"{t.label} entry 0: opened for another cluster than cluster.toml's"
        if t.incarnation != k:
            return f"{t.label} entry 0: records incarnation {t.incarnation}, its file says {k}"
        closes = [e["i"] for e in t.entries if e["dir"] == "close"]
        if closes:
            return (
                f"{t.label} entry {closes[0]}: a closed transcript is not a crash (a party "
                "that closed its transcript has finished and is never restarted)"
            )
        spoke = [
            e
            for e in t.entries
            if e["dir"] == "speak"
            or (e["dir"] == "send" and not str(e.get("ty", "_")).startswith("_"))
        ]
        if spoke:
            e = spoke[0]
            return (
                f"{t.label} entry {e['i']}: incarnation {k} sent {e.get('ty')!r} to "
                f"{e.get('peer')} and yet {party} was restarted: a party that sent a protocol "
                "message cannot rejoin"
            )
        crashed.append(t)
    current.crashed = crashed
    return None


def describe(t: Transcript) -> str:
    """What a verified crashed incarnation contains, in one line."""
    recv = [e for e in t.entries if e["dir"] == "recv"]
    peers = sorted({str(e["peer"]) for e in recv})
    tail = (
        f"; its last {t.unsigned_tail} entries were cut by the crash (unsigned, ignored)"
        if t.unsigned_tail
        else ""
    )
    return (
        f"{t.label}.jsonl (incarnation {t.incarnation}): {len(t.entries)} signed entries, "
        f"received {len(recv)} message(s)"
        + (f" from {', '.join(peers)}" if peers else "")
        + f", sent no protocol message{tail}"
    )


def rejoined(party: str, incarnation: int, transcripts: dict[str, Transcript]) -> list[str]:
    """The peers whose signed ``rejoin`` entries record ``party`` back as ``incarnation``."""
    return sorted(
        n
        for n, t in transcripts.items()
        if n != party
        and any(
            e["dir"] == "rejoin" and e.get("peer") == party and e.get("inc") == incarnation
            for e in t.entries
        )
    )


def restart_line(t: Transcript, transcripts: dict[str, Transcript]) -> str:
    """What ``sdp verify`` says of a restarted party: that it rejoined only where a peer's
    signed ``rejoin`` entry says so; otherwise that the restart never rejoined the run."""
    peers = rejoined(t.party, t.incarnation, transcripts)
    crashed = "; ".join(describe(c) for c in t.crashed)
    if peers:
        return (
            f"{t.party} was restarted {len(t.crashed)} time(s) and rejoined as incarnation "
            f"{t.incarnation} (rejoin recorded by {', '.join(peers)}); crashed incarnations "
            f"verified: {crashed}"
        )
    return (
        f"{t.party} was started again as incarnation {t.incarnation} but never rejoined the run "
        f"(no peer recorded its rejoin); crashed incarnations verified: {crashed}"
    )
