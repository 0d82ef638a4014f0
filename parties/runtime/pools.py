"""Where a party's CPU-bound work runs: the local process pool (default) or a Dask cluster.

A *pool spec* names it: ``local`` (``mpc.pools.process_pool``, the default, as many worker
processes as the party is given) or ``dask://HOST:PORT`` (the scheduler of a Dask
``distributed`` cluster whose workers may sit on many hosts; its ``Client.get_executor()`` is a
``concurrent.futures`` executor like the local pool, so the mix server, ``sdp verify`` and the
simulations hand it the same chunked work). Dask is an optional dependency
(``pip install 'shuffle-dp[dask]'``); a ``dask://`` spec without it is refused with that line.

Large data never travels through the scheduler: an argument of more than
``SCATTER_MIN_BYTES`` (Dask's ``sizeof`` estimate) is first sent straight to a worker
(``Client.scatter(direct=True)``) and the task names it by its key, and results come back from
the workers directly (``direct_to_workers``). Sent inside the task graph instead, the chunks of
a 10^6-user mix step (up to 185 MiB a graph) stalled the scheduler's loop for seconds at a time
and kept gigabytes in its memory. Arguments and results are pickled whole (``Whole``), not item
by item as Dask does for lists.

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
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, InvalidStateError
from dataclasses import dataclass
from typing import Any

from mpc.pools import peak_rss, process_pool, workers_peak_rss

DASK_RE = re.compile(r"dask://(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):(?P<port>\d{1,5})")
CONNECT_TIMEOUT_S = 30.0
SCATTER_MIN_BYTES = 256 * 1024


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
        client = Client(
            address, timeout=CONNECT_TIMEOUT_S, set_as_default=False, direct_to_workers=True
        )
    except (OSError, TimeoutError) as exc:
        raise PoolSpecError(f"pool {spec!r}: cannot reach the Dask scheduler: {exc}") from None
    threads = sum(client.nthreads().values())
    if threads < 1:
        client.close()
        raise PoolSpecError(f"pool {spec!r}: the Dask scheduler has no workers")
    return OpenPool(_direct_executor(client), threads, "dask", address, client)


class Whole:
    """A value Dask must pickle in one piece. Dask serializes a list, tuple, dict or set item
    by item, each item its own frame: a chunk of 20,000 ciphertext tuples took 28.5 s that way
    against 0.06 s for one ``pickle.dumps`` (measured on this machine), so the party's one
    core, not the workers, set the pace of a 10^6-user mix step. Arguments and results of
    every task travel wrapped."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __reduce__(self) -> tuple:
        return (Whole, (self.value,))


def run_unwrapped(fn: Callable, *args: Any) -> Whole:
    """``fn(*args)`` on a Dask worker, its ``Whole`` arguments unwrapped, its result wrapped."""
    return Whole(fn(*(a.value if isinstance(a, Whole) else a for a in args)))


def _unwrapping(inner: Future) -> Future:
    """A future of ``inner``'s result with its ``Whole`` unwrapped; cancelling it cancels
    ``inner`` (and so the Dask task)."""
    outer: Future = Future()

    def relay(f: Future) -> None:
        try:
            if f.cancelled():
                if outer.cancel():
                    outer.set_running_or_notify_cancel()
            elif f.exception() is not None:
                outer.set_exception(f.exception())
            else:
                r = f.result()
                outer.set_result(r.value if isinstance(r, Whole) else r)
        except InvalidStateError:  # the caller cancelled ``outer`` first
            pass

    inner.add_done_callback(relay)
    outer.add_done_callback(lambda o: o.cancelled() and inner.cancel())
    return outer


def _direct_executor(client: Any) -> Executor:
    """A ``concurrent.futures`` executor on ``client`` whose large arguments go to the workers
    directly and whose arguments and results are pickled whole (module docstring, ``Whole``);
    made here because ``distributed`` is imported only on use."""
    from dask.sizeof import sizeof
    from distributed.cfexecutor import ClientExecutor

    class DirectExecutor(ClientExecutor):
        def _ship(self, args: tuple, sent: dict[int, tuple[Any, Any]]) -> list[Any]:
            """``args`` wrapped whole, each large one replaced by the future of its copy on a
            worker; ``sent`` (by object id, the object kept alive beside it) sends a repeated
            argument once."""
            out = []
            for arg in args:
                if sizeof(arg) < SCATTER_MIN_BYTES:
                    out.append(Whole(arg))
                    continue
                if id(arg) not in sent:
                    # a list of one: scatter would otherwise send a list's items one by one
                    fut = self._client.scatter([Whole(arg)], direct=True, hash=False)[0]
                    sent[id(arg)] = (arg, fut)
                out.append(sent[id(arg)][1])
            return out

        def _submit(self, fn: Callable, args: tuple, sent: dict, kwargs: dict) -> Future:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            shipped = self._ship(args, sent)
            return _unwrapping(super().submit(run_unwrapped, fn, *shipped, **kwargs))

        def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> Future:
            return self._submit(fn, args, {}, kwargs)

        def map(
            self, fn: Callable, *iterables: Iterable, timeout: float | None = None,
            chunksize: int = 1,
        ) -> Iterator:  # fmt: skip
            """As ``Executor.map``: every call submitted now (a task each, its large
            arguments sent once to a worker), results in order, the rest cancelled when the
            caller stops early or a call raises."""
            sent: dict[int, tuple[Any, Any]] = {}
            fs = [self._submit(fn, a, sent, {}) for a in zip(*iterables)]
            sent.clear()
            end = None if timeout is None else time.monotonic() + timeout

            def results() -> Iterator:
                try:
                    for f in fs:
                        left = None if end is None else max(end - time.monotonic(), 0.0)
                        yield f.result(left)
                finally:
                    for f in fs:
                        f.cancel()

            return results()

    return DirectExecutor(client, pure=False)
