"""Memory predicted before a run starts (docs/deploy.md, "Limits"), so that a run that cannot fit
is refused with the estimate instead of growing until the kernel kills a party.

The estimate of a party's peak memory is a documented function of its share of the messages:

- a client party encodes its users in blocks of at most ``BLOCK_USERS``: peak
  ``BASE + min(users / clients, BLOCK_USERS) * m * BYTES_PER_MESSAGE``;
- the party that holds every message of a round (the trusted shuffler, the analyzer; a mix or
  MPC server holds them as ciphertexts or shares, larger still): ``BASE + n * m *
  BYTES_PER_MESSAGE``,

- a mix server (``--shuffler mixnet``): peak ``BASE + n * m * MIX_SERVER_BYTES_PER_MESSAGE``
  (its pool workers included), measured (``docs/scale.md``, "Memory"): what it holds through
  the run (its client submissions kept as their encoding, every mix step's blobs, the lists it
  builds on as ``Points``, the decryption shares: about 1.8 kB per user) and, while it checks
  another server's mix step, the verifier's working set (about 3.4 kB per user, one step at a
  time); its public record is written to disk as it is encoded, never held whole. The servers'
  peaks do not coincide (each checks a step when it arrives, at most two at once), so for the
  host's total a server counts ``n * m * MIX_SERVER_AT_ONCE_BYTES_PER_MESSAGE``, the measured
  total of a whole run at its fullest moment shared among its 3 servers,

with ``m`` the protocol's messages per user (``messages_per_user()``) and ``n`` the users. The
run is refused when a party's estimate exceeds the per-process address-space limit
(``RLIMIT_AS``, e.g. ``prlimit --as``), or, without one, when the parties' data plus
``BASE_RSS`` each exceeds the memory available (``MemAvailable``).
"""

from __future__ import annotations

import ctypes
import os
import resource
from typing import Any

BASE_BYTES = 1 << 30  # an idle party's address space (interpreter, numpy, TLS, thread stacks)
BASE_RSS = 200 << 20  # an idle party's resident memory (what MemAvailable is compared with)
BYTES_PER_MESSAGE = 64  # a label (8 bytes) and its copies: encoding, frames, transcript digest
# a mix server's peak per message, its pool workers included (3 servers, t = 2; fitted on
# 2000-10^5 users, 2026-11-29: 6.96 kB, of which 5.8 kB in the server process; 12.6 kB before
# the record was streamed and the lists packed; docs/scale.md, "Memory")
MIX_SERVER_BYTES_PER_MESSAGE = 7_000
# a whole k = 3 run's resident memory at its fullest moment grew 12.6 kB per user (every
# party, sampled together): a third of it per server is what the host's total counts
MIX_SERVER_AT_ONCE_BYTES_PER_MESSAGE = 4_200


# glibc malloc: a party's threads (``asyncio.to_thread``) each got an arena of their own, and
# buffers freed by one stayed mapped; two arenas and a fixed mmap threshold (blocks of 64 kB or
# more mapped and unmapped on free) took 7% off a mix server's peak at 2*10^4 users
MALLOC_ENV = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "65536"}
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8  # mallopt parameters (malloc.h)


def bound_allocator() -> bool:
    """Apply ``MALLOC_ENV`` to this process (``mallopt``) and to the processes it starts (its
    pool workers, through the environment); False where the C library is not glibc."""
    for k, v in MALLOC_ENV.items():
        os.environ.setdefault(k, v)
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(
            libc.mallopt(_M_ARENA_MAX, int(os.environ["MALLOC_ARENA_MAX"]))
            and libc.mallopt(_M_MMAP_THRESHOLD, int(os.environ["MALLOC_MMAP_THRESHOLD_"]))
        )
    except (OSError, AttributeError, ValueError):
        return False


def _gb(x: float) -> str:
    return f"{x / 1e9:.3g} GB"


def available_bytes() -> tuple[float, str]:
    """(bytes one party may use, what bounds it): RLIMIT_AS if set, else MemAvailable."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        return float(soft), "the address-space limit (RLIMIT_AS) of every party"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024, "the memory available on this host"
    except OSError:
        pass
    return float("inf"), "no known limit"


def predict(
    protocol: Any, users: int, clients: int, block_users: int = 200_000, mix_servers: int = 0
) -> dict[str, float] | None:
    """Peak bytes of a client party (encoding ``block_users`` users at a time), of the
    collecting party and (with ``mix_servers``) of each mix server, or None when the protocol
    does not say how many messages a user sends (``messages_per_user``; a mix-net run counts
    one message per user per batch of the first round where it does not)."""
    per_user = getattr(protocol, "messages_per_user", None)
    if per_user is None and not (mix_servers and hasattr(protocol, "batch_specs")):
        return None
    m = float(per_user()) if per_user is not None else float(len(protocol.batch_specs()))
    share = min(users / max(1, clients), block_users)
    return {
        "messages": users * m,
        "client": BASE_BYTES + share * m * BYTES_PER_MESSAGE,
        "collector": BASE_BYTES + users * m * BYTES_PER_MESSAGE,
        "mix_server": BASE_BYTES + users * m * MIX_SERVER_BYTES_PER_MESSAGE if mix_servers else 0.0,
        "mix_server_at_once": users * m * MIX_SERVER_AT_ONCE_BYTES_PER_MESSAGE
        if mix_servers
        else 0.0,
    }


def memory_refusal(
    protocol: Any, users: int, clients: int, parties: int, block_users: int, mix_servers: int = 0
) -> str | None:
    """Why the run cannot fit (one line with the estimate), or None."""
    est = predict(protocol, users, clients, block_users, mix_servers)
    if est is None:
        return None
    limit, what = available_bytes()
    peak = max(est["client"], est["collector"], est["mix_server"])
    data = est["collector"] - BASE_BYTES + clients * (est["client"] - BASE_BYTES)
    if mix_servers:  # their peaks do not coincide (module docstring)
        data += mix_servers * est["mix_server_at_once"]
    total = data + parties * BASE_RSS
    if "RLIMIT_AS" in what and peak <= limit:
        return None
    if "RLIMIT_AS" not in what and total <= limit:
        return None
    return (
        f"refused before any party started: {users} users send {est['messages']:.3g} messages "
        f"({est['messages'] / max(1, users):.3g} per user); the party that collects them would "
        f"need about {_gb(est['collector'])}"
        + (
            f", each of the {mix_servers} mix servers {_gb(est['mix_server'])} at its peak "
            f"({_gb(est['mix_server_at_once'])} at the run's fullest moment)"
            if mix_servers
            else ""
        )
        + f" and each client party {_gb(est['client'])} ({_gb(total)} in all), over "
        f"{_gb(limit)}: {what}"
    )
