"""Memory predicted before a run starts (docs/deploy.md, "Limits"), so that a run that cannot fit
is refused with the estimate instead of growing until the kernel kills a party.

The estimate of a party's peak memory is a documented function of its share of the messages:

- a client party encodes its users in blocks of at most ``BLOCK_USERS``: peak
  ``BASE + min(users / clients, BLOCK_USERS) * m * BYTES_PER_MESSAGE``;
- the party that holds every message of a round (the trusted shuffler, the analyzer; a mix or
  MPC server holds them as ciphertexts or shares, larger still): ``BASE + n * m *
  BYTES_PER_MESSAGE``,

- a mix server (``--shuffler mixnet``) keeps the whole run's public record until it writes it:
  every client submission with its proof, every server's shuffled list with its proof of
  shuffle, the decryption shares, as Python lists of 32-byte ``bytes`` objects (about 73 bytes
  each with its list slot, 2.3 times the raw size) next to the received frames: peak
  ``BASE + n * m * MIX_SERVER_BYTES_PER_MESSAGE``, measured (``docs/scale.md``, "Memory"),

with ``m`` the protocol's messages per user (``messages_per_user()``) and ``n`` the users. The
run is refused when a party's estimate exceeds the per-process address-space limit
(``RLIMIT_AS``, e.g. ``prlimit --as``), or, without one, when the parties' data plus
``BASE_RSS`` each exceeds the memory available (``MemAvailable``).
"""

from __future__ import annotations

import resource
from typing import Any

BASE_BYTES = 1 << 30  # an idle party's address space (interpreter, numpy, TLS, thread stacks)
BASE_RSS = 200 << 20  # an idle party's resident memory (what MemAvailable is compared with)
BYTES_PER_MESSAGE = 64  # a label (8 bytes) and its copies: encoding, frames, transcript digest
# a mix server's peak per message, its pool workers included (3 servers, t = 2; fitted on
# 2000-10^5 users: 12.6 kB, of which 11.4 kB in the server process; docs/scale.md, "Memory")
MIX_SERVER_BYTES_PER_MESSAGE = 12_000


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
    if mix_servers:
        data += mix_servers * (est["mix_server"] - BASE_BYTES)
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
            f", each of the {mix_servers} mix servers {_gb(est['mix_server'])}"
            if mix_servers
            else ""
        )
        + f" and each client party {_gb(est['client'])} ({_gb(total)} in all), over "
        f"{_gb(limit)}: {what}"
    )
