"""Bounded fan-out (docs/deploy.md, "Limits"): how many client parties one run may start.

A client party is a process that serves many data owners' parts (its share of the users), so
more client parties than records is never needed, and one host runs at most
``MAX_PARTIES_PER_HOST`` parties of a run (``sdp run`` puts them all on this host).
"""

from __future__ import annotations

from parties.runtime.cluster import ClusterError

MAX_PARTIES_PER_HOST = 64


def check_fanout(clients: int, users: int | None, others: int, source: str) -> None:
    """Refuse, in one line, a run whose client parties outnumber its users (``source`` names
    where the users come from) or whose parties exceed the per-host limit."""
    if clients < 1:
        raise ClusterError(f"--clients {clients}: a run needs at least one client party")
    if users is not None and clients > users:
        raise ClusterError(
            f"--clients {clients} is more than the {users} users of {source}: each client "
            f"party serves at least one user's record (use --clients {max(1, users)} or fewer)"
        )
    if clients + others > MAX_PARTIES_PER_HOST:
        raise ClusterError(
            f"--clients {clients} would start {clients + others} party processes on this host "
            f"(at most {MAX_PARTIES_PER_HOST}; one client party serves many data owners' parts: "
            f"use --clients {MAX_PARTIES_PER_HOST - others} or fewer)"
        )
