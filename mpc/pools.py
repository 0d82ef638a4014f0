"""Process pools for CPU-bound party work.

Workers come from a *forkserver*: they do not inherit the party's sockets, pipes or TLS state.
A forked worker would keep a killed party's connections open (its peers would then wait for a
timeout instead of seeing the disconnect) and hold the launcher's log pipes.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes started by a clean forkserver."""
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("forkserver")
    )
