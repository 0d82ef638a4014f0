"""Per-party cost ledger: bytes, messages, frames, CPU and wall seconds per phase and round.

CPU seconds are the party process's own plus those of its process-pool workers
(``mpc.pools.process_pool``, read from ``/proc`` on Linux); MPyC's mesh is not included.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mpc.pools import WorkerCpu


@dataclass
class RoundCost:
    """Costs of one (phase, round) at one party."""

    bytes_sent: int = 0
    bytes_recv: int = 0
    msgs_sent: int = 0
    msgs_recv: int = 0
    frames_sent: int = 0
    frames_recv: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0


class CostLedger:
    """Accumulates costs; CPU/wall time goes to the phase the party is in."""

    def __init__(self, party: str) -> None:
        self.party = party
        self._rows: dict[tuple[str, int], RoundCost] = {}
        self._current = ("setup", 0)
        self._cpu0 = time.process_time()
        self._wall0 = time.perf_counter()
        self._workers = WorkerCpu()
        self.row("setup", 0)

    def row(self, phase: str, rnd: int) -> RoundCost:
        """The (created on demand) cost row of a phase and round."""
        key = (phase, rnd)
        r = self._rows.get(key)
        if r is None:
            r = self._rows[key] = RoundCost()
        return r

    def _close_interval(self) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        r = self.row(*self._current)
        r.cpu_s += cpu - self._cpu0 + self._workers.delta()
        r.wall_s += wall - self._wall0
        self._cpu0, self._wall0 = cpu, wall

    def enter(self, phase: str, rnd: int = 0) -> None:
        """Switch the phase/round that time is attributed to."""
        if (phase, rnd) == self._current:
            return
        self._close_interval()
        self._current = (phase, rnd)
        self.row(phase, rnd)

    @property
    def current(self) -> tuple[str, int]:
        return self._current

    def sent(self, phase: str, rnd: int, nbytes: int, frames: int = 1, messages: int = 0) -> None:
        r = self.row(phase, rnd)
        r.bytes_sent += nbytes
        r.frames_sent += frames
        r.msgs_sent += messages

    def received(
        self, phase: str, rnd: int, nbytes: int, frames: int = 1, messages: int = 0
    ) -> None:
        r = self.row(phase, rnd)
        r.bytes_recv += nbytes
        r.frames_recv += frames
        r.msgs_recv += messages

    def to_json(self) -> dict[str, Any]:
        """{party, phases: [{phase, rounds: [{round, ...costs}], totals}]} in first-seen order."""
        self._close_interval()
        phases: dict[str, list[dict[str, Any]]] = {}
        for (phase, rnd), r in self._rows.items():
            phases.setdefault(phase, []).append({"round": rnd, **asdict(r)})
        out = []
        for phase, rounds in phases.items():
            rounds.sort(key=lambda x: x["round"])
            totals = {k: sum(x[k] for x in rounds) for k in asdict(RoundCost())}
            out.append(
                {"phase": phase, "n_rounds": len(rounds), "rounds": rounds, "totals": totals}
            )
        return {"party": self.party, "phases": out}

    def write(self, run_dir: Path) -> Path:
        """Write ``RUN_DIR/costs/PARTY.json``."""
        d = Path(run_dir) / "costs"
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{self.party}.json"
        path.write_text(json.dumps(self.to_json(), indent=1))
        return path
