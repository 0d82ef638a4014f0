"""Per-party cost ledger, one row per (phase, protocol round, step); fields in ``docs/costs.md``.

*Protocol round* is the round of the DP protocol (GFIM's two rounds, ...); *step* is the
sub-step of a shuffler or key generation inside it (DKG rounds 1-4, mix-net shuffle hops,
txpub LM iterations): for the phases in :func:`is_step_phase` the ``round`` a party passes to
``phase()`` is the step and the protocol round carries over from the last protocol phase;
for every other phase it is the protocol round and the step is 0.

Per row: the party's own time in the phase (``start``/``end``, unix seconds, and ``spans``),
CPU busy seconds (the process's own plus its process-pool workers', ``mpc.pools``; MPyC's
mesh is not a separate process and is included), seconds waiting in ``recv`` for a peer,
seconds blocked in ``send`` (flow control and WAN emulation), and bytes split into payload,
framing (frame prefix + CBOR header) and sealing (seal frames), with a per-peer breakdown.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mpc.pools import WorkerCpu, peak_rss, workers_peak_rss
from parties.runtime.host_load import host_identity, host_sample

# phases whose ``round`` argument is a sub-step of the current protocol round
STEP_PHASES = frozenset({"dkg", "lm", "close"})
# phases that end the current protocol round rather than start one (an analyzer publishes its
# estimate as ``publish`` round 0 after the last round): they keep the protocol round, step 0
KEEP_ROUND_PHASES = frozenset({"publish"})
MAX_SPANS = 256  # spans kept per row (later visits extend the last one)
MAX_HOST_SAMPLES = 512  # host samples kept per party (later ones replace the last)
# TLS 1.3 record overhead (5-byte header + 1 content type + 16-byte AEAD tag) per record of at
# most 16384 plaintext bytes: a lower bound on what the kernel sends, see docs/costs.md
TLS_RECORD = 16384
TLS_RECORD_OVERHEAD = 22


def is_step_phase(phase: str) -> bool:
    """Whether ``phase``'s round number is a shuffler/DKG step rather than a protocol round."""
    return phase in STEP_PHASES or phase.startswith("mix.")


def tls_overhead_estimate(nbytes: int, writes: int) -> int:
    """Least TLS 1.3 record overhead of ``nbytes`` written in ``writes`` writes."""
    if nbytes <= 0:
        return 0
    records = max(writes, -(-nbytes // TLS_RECORD))
    return records * TLS_RECORD_OVERHEAD


@dataclass
class PeerCost:
    """Traffic with one peer within one row."""

    bytes_sent: int = 0
    bytes_recv: int = 0
    payload_sent: int = 0
    payload_recv: int = 0
    msgs_sent: int = 0
    msgs_recv: int = 0
    frames_sent: int = 0
    frames_recv: int = 0


@dataclass
class RoundCost:
    """Costs of one (phase, protocol round, step) at one party."""

    bytes_sent: int = 0  # payload + framing + sealing (+ mpyc)
    bytes_recv: int = 0
    payload_sent: int = 0
    payload_recv: int = 0
    framing_sent: int = 0
    framing_recv: int = 0
    sealing_sent: int = 0
    sealing_recv: int = 0
    mpyc_sent: int = 0  # MPyC mesh bytes (its own framing, no per-peer split)
    mpyc_flights: int = 0  # MPyC rounds: the most flights on one mesh link (mpyc_rounds.py)
    writes_sent: int = 0  # socket writes (frames and seals): at least one TLS record each
    msgs_sent: int = 0
    msgs_recv: int = 0
    frames_sent: int = 0
    frames_recv: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    wait_s: float = 0.0
    send_s: float = 0.0
    start: float | None = None
    end: float | None = None
    spans: list[list[float]] = field(default_factory=list)
    peers: dict[str, PeerCost] = field(default_factory=dict)
    # the host as the party entered the row first and left it last: 1-minute load average and
    # the party's own CPU share (its CPU seconds / wall seconds) over the interval just closed
    load: dict[str, list[float | None]] = field(default_factory=dict)

    def peer(self, name: str) -> PeerCost:
        p = self.peers.get(name)
        if p is None:
            p = self.peers[name] = PeerCost()
        return p

    def touch(self, t: float) -> None:
        self.start = t if self.start is None else min(self.start, t)
        self.end = t if self.end is None else max(self.end, t)


SUMMED = [
    k
    for k, v in RoundCost.__dataclass_fields__.items()
    if v.type in ("int", "float") and k not in ("start", "end")
] + ["tls_overhead_sent_est"]


def tcp_counts(sock: Any) -> tuple[int, int] | None:
    """(bytes sent, bytes received) of a TCP connection as the kernel counts them (below TLS:
    records, handshake and all), from ``TCP_INFO`` (Linux: ``tcpi_bytes_sent`` at offset 200,
    kernel 4.19 and later, else ``tcpi_bytes_acked`` at 120; ``tcpi_bytes_received`` at 128);
    None where the platform does not say."""
    import socket
    import struct

    opt = getattr(socket, "TCP_INFO", None)
    if sock is None or opt is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, opt, 256)
    except (OSError, ValueError):
        return None
    if len(info) < 136:
        return None
    acked, received = struct.unpack_from("<QQ", info, 120)
    sent = struct.unpack_from("<Q", info, 200)[0] if len(info) >= 208 else acked
    return max(sent, acked), received


def memory_peaks() -> dict[str, Any]:
    """This party's peak resident bytes (``VmHWM``) and its process-pool workers' (each, and
    their sum: an upper bound on what they held at once); None where /proc is unreadable."""
    workers = workers_peak_rss()
    return {
        "peak_rss_bytes": peak_rss(),
        "pool_workers": len(workers),
        "pool_workers_peak_rss_bytes": sorted(workers.values(), reverse=True),
        "pool_workers_peak_rss_sum_bytes": sum(workers.values()),
    }


def bench_peak_rss(party: str = "bench (every party in this process)") -> dict[str, Any]:
    """``{party: memory_peaks()}``: a benchmark's peak RSS per party where its parties share
    its process (the benchmarks that start party processes report each from its ledger)."""
    return {party: memory_peaks()}


class CostLedger:
    """Accumulates costs; CPU/wall time goes to the row the party is in."""

    def __init__(self, party: str) -> None:
        self.party = party
        self._rows: dict[tuple[str, int, int], RoundCost] = {}
        self._pr = 0
        self._phase = ("setup", 0)
        self._current = ("setup", 0, 0)
        self._cpu0 = time.process_time()
        self._perf0 = self._wall0 = time.perf_counter()
        self._unix0 = time.time()
        self._workers = WorkerCpu()
        # overlapping waits (a gather over peers) count once: depth and since when
        self._busy = {"wait_s": [0, 0.0], "send_s": [0, 0.0]}
        self.tcp: dict[str, dict[str, int]] = {}  # per peer: the kernel's TCP byte counts
        self.host = {**host_identity(), "samples": [host_sample()]}
        self._share: float | None = None  # own CPU share of the interval closed last
        self.row("setup", 0)
        self._rows[self._current].load["start"] = [self.host["samples"][0]["load1"], None]

    def now(self) -> float:
        """Unix seconds (monotonic within the party)."""
        return self._unix0 + (time.perf_counter() - self._perf0)

    def key(self, phase: str, rnd: int, pr: int | None = None) -> tuple[str, int, int]:
        """(phase, protocol round, step) of a (phase, round) as frames carry it."""
        if is_step_phase(phase):
            return (phase, self._pr if pr is None else pr, rnd)
        if phase in KEEP_ROUND_PHASES:
            return (phase, self._pr if pr is None else pr, 0)
        return (phase, rnd if pr is None else pr, 0)

    def row(self, phase: str, rnd: int, pr: int | None = None) -> RoundCost:
        """The (created on demand) cost row of a phase and round (``pr``: protocol round)."""
        key = self.key(phase, rnd, pr)
        r = self._rows.get(key)
        if r is None:
            r = self._rows[key] = RoundCost()
        return r

    def _close_interval(self) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        r = self._rows[self._current]
        r.cpu_s += cpu - self._cpu0 + self._workers.delta()
        r.wall_s += wall - self._wall0
        t0 = self._unix0 + (self._wall0 - self._perf0)
        t1 = self._unix0 + (wall - self._perf0)
        if len(r.spans) < MAX_SPANS:
            r.spans.append([round(t0, 6), round(t1, 6)])
        else:
            r.spans[-1][1] = round(t1, 6)
        r.touch(t0)
        r.touch(t1)
        for name, state in self._busy.items():
            if state[0]:
                setattr(r, name, getattr(r, name) + wall - state[1])
                state[1] = wall
        if wall > self._wall0:
            self._share = round((cpu - self._cpu0) / (wall - self._wall0), 4)
        self._cpu0, self._wall0 = cpu, wall

    def _sample_host(self) -> float | None:
        """Sample the host (phase change or close); the load average sampled."""
        s = host_sample()
        samples = self.host["samples"]
        if len(samples) < MAX_HOST_SAMPLES:
            samples.append(s)
        else:
            samples[-1] = s
        return s["load1"]

    def enter(self, phase: str, rnd: int = 0) -> None:
        """Switch the phase/round that time is attributed to."""
        if (phase, rnd) == self._phase:
            return
        self._close_interval()
        load1 = self._sample_host()
        self._rows[self._current].load["end"] = [load1, self._share]
        if not is_step_phase(phase) and phase not in KEEP_ROUND_PHASES:
            self._pr = rnd
        self._phase = (phase, rnd)
        self._current = self.key(phase, rnd)
        self.row(phase, rnd).load.setdefault("start", [load1, self._share])

    @property
    def current(self) -> tuple[str, int]:
        """(phase, round) as the party passed them to ``phase()`` (what frames carry)."""
        return self._phase

    @property
    def protocol_round(self) -> int:
        return self._pr

    def sent(
        self,
        phase: str,
        rnd: int,
        nbytes: int,
        frames: int = 1,
        messages: int = 0,
        *,
        pr: int | None = None,
        peer: str | None = None,
        kind: str = "mpyc",
        writes: int = 0,
    ) -> None:
        """Count bytes sent; ``kind``: payload, framing, sealing or mpyc (the default, for
        callers that count another engine's traffic)."""
        r = self._count("sent", phase, rnd, nbytes, frames, messages, pr, peer, kind)
        r.writes_sent += writes

    def received(
        self,
        phase: str,
        rnd: int,
        nbytes: int,
        frames: int = 1,
        messages: int = 0,
        *,
        pr: int | None = None,
        peer: str | None = None,
        kind: str = "payload",
    ) -> None:
        """Count bytes received (MPyC's received bytes have no split of their own)."""
        self._count("recv", phase, rnd, nbytes, frames, messages, pr, peer, kind)

    def _count(
        self,
        way: str,
        phase: str,
        rnd: int,
        nbytes: int,
        frames: int,
        messages: int,
        pr: int | None,
        peer: str | None,
        kind: str,
    ) -> RoundCost:
        r = self.row(phase, rnd, pr)
        targets: list[Any] = [r] if peer is None else [r, r.peer(peer)]
        for t in targets:
            for name, n in (("bytes", nbytes), ("frames", frames), ("msgs", messages)):
                setattr(t, f"{name}_{way}", getattr(t, f"{name}_{way}") + n)
            split = f"{kind}_{way}"
            if hasattr(t, split) and (t is r or kind == "payload"):
                setattr(t, split, getattr(t, split) + nbytes)
        if nbytes or messages:
            r.touch(self.now())
        return r

    def begin(self, what: str) -> None:
        """A ``recv`` starts waiting for a peer (``what="wait_s"``) or a ``send`` blocks on
        flow control (``"send_s"``); time with at least one pending counts once."""
        state = self._busy[what]
        if state[0] == 0:
            state[1] = time.perf_counter()
        state[0] += 1

    def end(self, what: str) -> None:
        """The matching end of ``begin``; the time goes to the current row."""
        state = self._busy[what]
        state[0] -= 1
        if state[0] == 0:
            r = self._rows[self._current]
            setattr(r, what, getattr(r, what) + time.perf_counter() - state[1])

    def to_json(self) -> dict[str, Any]:
        """{party, rows: [...], phases: [{phase, n_rounds, rounds, totals}]} in time order."""
        self._close_interval()
        load1 = self._sample_host()
        self._rows[self._current].load["end"] = [load1, self._share]
        rows = []
        for (phase, pr, step), r in self._rows.items():
            d = asdict(r)
            d["cpu_s"] = round(d["cpu_s"], 6)
            d["tls_overhead_sent_est"] = tls_overhead_estimate(
                r.bytes_sent - r.mpyc_sent, r.writes_sent
            )
            rows.append({"phase": phase, "round": pr, "step": step, **d})
        rows.sort(key=lambda x: (x["start"] is None, x["start"] or 0.0))
        phases: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            phases.setdefault(row["phase"], []).append(row)
        out = []
        for phase, rs in phases.items():
            totals = {k: sum(x[k] for x in rs) for k in SUMMED}
            out.append(
                {
                    "phase": phase,
                    "n_rounds": len(rs),
                    "rounds": [
                        {k: v for k, v in x.items() if k not in ("spans", "peers", "load")}
                        for x in rs
                    ],
                    "totals": totals,
                }
            )
        return {
            "party": self.party,
            "clock": "unix seconds",
            "host_cores": os.cpu_count() or 1,
            "host": self.host,
            "tcp": self.tcp,
            "memory": memory_peaks(),
            "rows": rows,
            "phases": out,
        }

    def write(self, run_dir: Path) -> Path:
        """Write ``RUN_DIR/costs/PARTY.json``."""
        d = Path(run_dir) / "costs"
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{self.party}.json"
        path.write_text(json.dumps(self.to_json(), indent=1))
        return path
