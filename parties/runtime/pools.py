"""Where a party's CPU-bound work runs: the local process pool (default) or a Dask cluster.

A *pool spec* names it: ``local`` (``mpc.pools.process_pool``, the default, as many worker
processes as the party is given) or ``dask://HOST:PORT`` (the scheduler of a Dask
``distributed`` cluster whose workers may sit on many hosts; its ``Client.get_executor()`` is a
``concurrent.futures`` executor like the local pool, so the mix server, ``sdp verify`` and the
simulations hand it the same chunked work). Dask is an optional dependency
(``pip install 'shuffle-dp[dask]'``); a ``dask://`` spec without it is refused with that line.

Every task goes out with ``pure=False``: Dask must never merge two calls with equal arguments
into one (a task that draws randomness inside the worker would otherwise hand two callers the
same random values), and each task is re-run elsewhere if its worker dies mid-task (the
scheduler's ``allowed-failures``, 3 by default), so a killed worker costs time, not the run.

What a worker receives: the mix server sends its chunks of public data (ciphertexts, public
keys, generators, challenges) and, for its own shuffle and decryption, secret data (each
chunk's randomness seed, its slice of the permutation, its key share's decryption work).
So a server's Dask workers are part of that server: ``docs/scale.md`` ("Running on a
cluster") says which hosts a server must trust, and the cluster file's ``[pool]`` table names
one scheduler per server; no secret goes to another server's workers unless an operator
points two servers at one scheduler (the tests do, on one machine).
"""

from __future__ import annotations

import re
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from mpc.pools import peak_rss, process_pool, workers_peak_rss

DASK_RE = re.compile(r"dask://(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):(?P<port>\d{1,5})")
CONNECT_TIMEOUT_S = 30.0


class PoolSpecError(ValueError):
    """A pool spec that names no pool we can open."""


def check_pool_spec(spec: str | None) -> str:
    """``spec`` normalised (``local`` for none); PoolSpecError says what is accepted."""
    if spec is None or spec == "" or spec == "local":
        return "local"
    if DASK_RE.fullmatch(spec) and 0 < int(DASK_RE.fullmatch(spec)["port"]) < 65536:  # type: ignore[index]
        return spec
    raise PoolSpecError(
        f"pool {spec!r}: expected 'local' or 'dask://HOST:PORT' (a Dask scheduler's address)"
    )


@dataclass
class OpenPool:
    """An executor for chunked work, how many chunks keep it busy, and how to let it go."""

    executor: Executor | None
    workers: int
    kind: str  # "local" or "dask"
    address: str = ""
    _client: Any = None

    def close(self) -> None:
        """Shut the local pool down, or disconnect from the Dask scheduler (its workers stay)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        elif self.executor is not None:
            self.executor.shutdown()
        self.executor = None

    def workers_peak_rss(self) -> dict[str, int | None]:
        """Peak resident bytes (``VmHWM``, over each worker's life) per worker: the local
        pool's by pid, a Dask cluster's by worker address (read on each worker)."""
        if self._client is not None:
            return dict(self._client.run(peak_rss))
        return {str(pid): b for pid, b in workers_peak_rss().items()}

    def __enter__(self) -> OpenPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_pool(spec: str | None, local_workers: int) -> OpenPool:
    """The pool ``spec`` names: a local process pool of ``local_workers`` processes (none when
    1: the work then runs in the party's own process), or a client of the Dask scheduler,
    whose ``workers`` is the cluster's total threads when it connected."""
    spec = check_pool_spec(spec)
    if spec == "local":
        ex = process_pool(local_workers) if local_workers > 1 else None
        return OpenPool(ex, max(1, local_workers), "local")
    try:
        from distributed import Client
    except ImportError:
        raise PoolSpecError(
            f"pool {spec!r} needs Dask's distributed package: pip install 'shuffle-dp[dask]'"
        ) from None
    address = "tcp://" + spec.removeprefix("dask://")
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise PoolSpecError(f"pool {spec!r}: cannot reach the Dask scheduler: {exc}") from None
    threads = sum(client.nthreads().values())
    if threads < 1:
        client.close()
        raise PoolSpecError(f"pool {spec!r}: the Dask scheduler has no workers")
    return OpenPool(client.get_executor(pure=False), threads, "dask", address, client)
