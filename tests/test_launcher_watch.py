"""The launcher's watch over its party processes (``parties.runtime.processes._watch``): the
failure of a party whose role the run tolerates starts no kill clock; any other failure does,
and the run's deadline is a backstop (real child processes, no protocol)."""

from __future__ import annotations

import asyncio
import sys

from parties.runtime.processes import _watch


async def _spawn(code: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, start_new_session=True
    )  # fmt: skip


async def _watch_pair(may_fail: frozenset[str], backstop: float = float("inf")) -> tuple:
    procs = {
        "client-1": await _spawn("import sys; sys.exit(1)"),  # fails at once
        "mix-1": await _spawn("import time; time.sleep(3)"),  # completes 3 s later
    }
    errors: dict[str, list[str]] = {}
    outcome = await _watch(procs, errors, 1.0, [], may_fail, backstop)
    return outcome, errors


async def test_a_tolerated_failure_lets_the_others_complete():
    outcome, errors = await _watch_pair(frozenset({"client-1"}))
    assert outcome["client-1"]["exit"] == 1
    assert outcome["mix-1"]["exit"] == 0, (outcome, errors)
    assert "mix-1" not in errors


async def test_any_other_failure_stops_the_rest_after_the_grace():
    outcome, errors = await _watch_pair(frozenset())
    assert outcome["mix-1"]["exit"] != 0, outcome
    assert "still running 1 s after the first failure" in errors["mix-1"][0], errors


async def test_the_run_deadline_is_a_backstop_even_for_tolerated_failures():
    outcome, errors = await _watch_pair(frozenset({"client-1"}), backstop=1.0)
    assert outcome["mix-1"]["exit"] != 0, outcome
    assert "after the start (the run's deadline)" in errors["mix-1"][0], errors
