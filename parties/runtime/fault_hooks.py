"""Fault injection for tests, read from the environment once (no effect when unset).

``SDP_FAULT_KILL=PARTY:PHASE[,PARTY:PHASE...]`` kills PARTY (SIGKILL, with its process group) on
entering PHASE; ``PARTY:sent:TYPE`` once it has written the frames of a TYPE message, before
their seal. ``SDP_FAULT_DELAY=PARTY:PHASE:SECONDS[,...]`` stalls PARTY for SECONDS on entering
PHASE (a host under load: what it sends next is late). ``SDP_FAULT_MPC_OFFSET=PARTY:BATCH:ROW:
OFFSET`` makes MPC server PARTY deviate: it adds OFFSET to row ROW of BATCH while it reshares;
``SDP_FAULT_MPC_INPUT=PARTY:CLIENT:OFFSET``: MPC server PARTY adds OFFSET to its share of
CLIENT's input-check value (its opening of the client's sharing check);
``SDP_FAULT_MPC_CLIENT=CLIENT``: MPC client party CLIENT shares its first value inconsistently
(the last server's share is off the polynomial) and signs what it sends.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

FAULT = set(filter(None, os.environ.get("SDP_FAULT_KILL", "").split(",")))
DELAY = {
    d.rsplit(":", 1)[0]: float(d.rsplit(":", 1)[1])
    for d in filter(None, os.environ.get("SDP_FAULT_DELAY", "").split(","))
}

_OFFSET = os.environ.get("SDP_FAULT_MPC_OFFSET", "").split(":")


def mpc_offset(party: str) -> tuple[str, int, int] | None:
    """(batch, row, offset) if MPC server ``party`` is to deviate while it reshares."""
    if len(_OFFSET) != 4 or _OFFSET[0] != party:
        return None
    return _OFFSET[1], int(_OFFSET[2]), int(_OFFSET[3])


_INPUT = os.environ.get("SDP_FAULT_MPC_INPUT", "").split(":")


def mpc_input_offset(party: str, client: str) -> int:
    """What MPC server ``party`` adds to its input-check value of ``client`` (0: nothing)."""
    if len(_INPUT) != 3 or _INPUT[0] != party or _INPUT[1] != client:
        return 0
    return int(_INPUT[2])


_CLIENT = os.environ.get("SDP_FAULT_MPC_CLIENT", "")


def mpc_client_inconsistent(party: str) -> bool:
    """True if MPC client ``party`` is to share its first value inconsistently."""
    return bool(_CLIENT) and _CLIENT == party


def die() -> None:
    """The party's host dies (SIGKILL, with its process group)."""
    if os.getpgid(0) == os.getpid():  # started by the launcher as its own group
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def entering(party: str, phase: str, checkpoint: Callable[[], None]) -> None:
    """Hook of ``Node.phase``: die or stall on entering ``phase`` if asked to."""
    if FAULT and f"{party}:{phase}" in FAULT:
        die()
    if DELAY and f"{party}:{phase}" in DELAY:
        checkpoint()  # what was sent before the stall is on disk
        time.sleep(DELAY[f"{party}:{phase}"])


def sent(party: str, msg_type: str) -> None:
    """Hook of ``Node.send`` after a message's frames, before its seal."""
    if FAULT and f"{party}:sent:{msg_type}" in FAULT:
        die()
