"""Issue 40: a mix server's and a verifier's work on a Dask cluster (scheduler and workers as
separate processes on loopback), the same bytes as on the local pool, and a worker killed
mid-step survived (Dask re-runs its task)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import sdp

pytest.importorskip("distributed")

from mpc.elgamal import encode_rows, encrypt_points, keygen  # noqa: E402
from mpc.mixnet.proofs.shuffle.prover import shuffle_and_prove  # noqa: E402
from mpc.mixnet.proofs.shuffle.verifier import verify_shuffle  # noqa: E402
from mpc.mixnet.schema import shuffle_generators  # noqa: E402
from parties.runtime.pools import PoolSpecError, check_pool_spec, open_pool  # noqa: E402

DASK = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
WORKER = [sys.executable, "-m", "distributed.cli.dask_worker"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaskCluster:
    """A Dask scheduler and ``workers`` single-threaded workers, each its own process."""

    def __init__(self, tmp: Path, workers: int = 2) -> None:
        self.port = _free_port()
        self.spec = f"dask://127.0.0.1:{self.port}"
        self.logs = tmp
        self.sched = subprocess.Popen(
            [*DASK, "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=open(tmp / "scheduler.log", "w"),
            start_new_session=True,
        )  # fmt: skip
        self.workers = [self._worker(i) for i in range(workers)]
        self.wait_for(workers)

    def _worker(self, i: int) -> subprocess.Popen:
        return subprocess.Popen(
            [*WORKER, f"tcp://127.0.0.1:{self.port}", "--nthreads", "1", "--no-nanny",
             "--no-dashboard", "--name", f"w{i}"],
            stdout=subprocess.DEVNULL, stderr=open(self.logs / f"worker{i}.log", "w"),
            start_new_session=True,
        )  # fmt: skip

    def client(self):  # noqa: ANN201
        from distributed import Client

        return Client(f"tcp://127.0.0.1:{self.port}", timeout=60, set_as_default=False)

    def wait_for(self, n: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with self.client() as c:
                    if len(c.nthreads()) >= n:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"the Dask cluster did not reach {n} workers in {timeout} s")

    def close(self) -> None:
        for p in [*self.workers, self.sched]:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.fixture
def dask_cluster(tmp_path):
    c = DaskCluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def test_pool_specs_are_checked():
    assert check_pool_spec(None) == check_pool_spec("local") == "local"
    assert check_pool_spec("dask://10.0.0.5:8786") == "dask://10.0.0.5:8786"
    for bad in ("dask://host", "ray://h:1", "dask://h:0", "dask://h:99999", "tcp://h:8786"):
        with pytest.raises(PoolSpecError, match="expected 'local' or 'dask://HOST:PORT'"):
            check_pool_spec(bad)


class _FixedOs:
    """``os`` for the prover's modules, with ``urandom`` from a fixed stream."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def urandom(self, k: int) -> bytes:
        return self._rng.bytes(k)

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


def _prove_twice(pools: list, workers: int, monkeypatch) -> list:  # noqa: ANN001
    """The same shuffle proven on each pool, the parent's randomness (the chunks' seeds) from
    the same fixed stream each time."""
    sess = b"\x07" * 64
    _, pk = keygen()
    rows = np.arange(40).reshape(40, 1) % 13
    ct, _ = encrypt_points(pk, encode_rows(rows, 16))
    gens = shuffle_generators(sess, "b", 40)
    perm = [int(i) for i in np.random.default_rng(3).permutation(40)]
    import mpc.mixnet.proofs.shuffle.prover
    import mpc.ristretto

    results = []
    for pool in pools:
        fixed = _FixedOs(np.random.default_rng(7))
        # the prover's own draws only: Dask's client threads keep the real os.urandom
        monkeypatch.setattr(mpc.mixnet.proofs.shuffle.prover, "os", fixed)
        monkeypatch.setattr(mpc.ristretto, "os", fixed)
        out, proof = shuffle_and_prove(sess, 1, "b", pk, ct, gens, workers, pool, perm=perm)
        monkeypatch.undo()
        verify_shuffle(sess, 1, "b", pk, ct, out, proof, gens)
        results.append((out.a, out.b, proof))
    return results


@pytest.mark.slow
def test_same_proof_bytes_on_the_local_pool_and_on_dask(dask_cluster, monkeypatch):
    """The pool only runs the chunks: with the same randomness and chunking, a proof made on
    Dask's workers (other processes) is byte for byte the one made on the local process pool."""
    with ProcessPoolExecutor(2) as local, open_pool(dask_cluster.spec, 1) as pool:
        assert pool.kind == "dask" and pool.workers == 2
        on_local, on_dask = _prove_twice([local, pool.executor], 2, monkeypatch)
    assert on_local == on_dask


@pytest.mark.slow
def test_large_chunks_go_to_the_workers_not_through_the_scheduler(dask_cluster):
    """Chunks of megabytes (a 10^6-user mix step's are hundreds) are scattered to the workers
    directly: Dask never warns of a large graph (it did, once per step, when the chunks rode in
    the task graph), the repeated argument is sent once, and the results come back in order.
    What a worker holds is pickled whole (``Whole``), not item by item as Dask pickles a list;
    a list of tuples, as a mix step's chunks are, goes through, and a task's error reaches
    the caller."""
    import operator
    import warnings

    from parties.runtime.pools import Whole

    head = b"s" * (1 << 20)
    chunks = [bytes([i]) * (4 << 20) for i in range(4)]
    rows = [(bytes(32), bytes(32), [bytes(32)] * 3)] * 20000
    with open_pool(dask_cluster.spec, 1) as pool, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = list(pool.executor.map(operator.add, [head] * len(chunks), chunks))
        fut = pool.executor.submit(operator.add, head, chunks[2])
        one = fut.result()
        with dask_cluster.client() as c:  # while ``fut`` lives, its inputs and result are held
            held = c.run(lambda dask_worker: [type(v).__name__ for v in dask_worker.data.values()])
        del fut
        assert list(pool.executor.map(len, [rows, rows[:5]])) == [20000, 5]
        with pytest.raises(TypeError):
            list(pool.executor.map(operator.add, [b"x"], [1]))
    assert got == [head + c for c in chunks] and one == got[2]
    assert not [w for w in seen if "large graph" in str(w.message)], [str(w.message) for w in seen]
    kinds = [k for v in held.values() for k in v]
    assert len(kinds) <= len(chunks) + 2, held  # nothing copied twice
    assert set(kinds) == {Whole.__name__}, held


@pytest.mark.slow
def test_mixnet_run_on_a_dask_cluster_verifies(dask_cluster, tmp_path):
    """``sdp run --pool dask://...``: the three mix servers' chunks run on the Dask workers
    (separate processes), the run verifies, and ``sdp verify --pool`` verifies it again there."""
    out = tmp_path / "run"
    sdp("run", "grr", "--shuffler", "mixnet", "--users", "300", "--pool", dask_cluster.spec,
        "--out", str(out), "--quiet", check=True, timeout=1200)  # fmt: skip
    assert f'mix-1 = "{dask_cluster.spec}"' in (out / "cluster.toml").read_text()
    log = (dask_cluster.logs / "scheduler.log").read_text()
    assert log.count("Receive client connection") >= 3  # one client per mix server
    with dask_cluster.client() as c:
        done = c.run(
            lambda dask_worker: len(dask_worker.state.tasks) + dask_worker.state.executed_count
        )
    assert all(v > 0 for v in done.values()), done  # both workers ran chunks
    proc = sdp("verify", str(out), "--trust", f"{out}.trust.json", "--pool", dask_cluster.spec,
               timeout=1200)  # fmt: skip
    assert proc.returncode == 0 and "verified" in proc.stdout


@pytest.mark.slow
def test_a_worker_killed_mid_step_is_survived(dask_cluster, tmp_path):
    """A Dask worker SIGKILLed while it holds a mix-step chunk: the scheduler re-runs the task
    on the other worker and the run still publishes and verifies."""
    out = tmp_path / "run"
    run = subprocess.Popen(
        [sys.executable, "-m", "parties.cli", "run", "grr", "--shuffler", "mixnet", "--users",
         "600", "--pool", dask_cluster.spec, "--out", str(out), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    killed = None
    try:
        with dask_cluster.client() as c:
            deadline = time.monotonic() + 900
            while killed is None and time.monotonic() < deadline and run.poll() is None:
                busy = {w: ks for w, ks in c.processing().items() if ks}
                if busy:
                    addr = next(iter(busy))
                    pid = c.run(os.getpid, workers=[addr])[addr]
                    os.kill(pid, signal.SIGKILL)
                    killed = addr
                time.sleep(0.05)
        output, _ = run.communicate(timeout=1200)
    finally:
        if run.poll() is None:
            run.kill()
    assert killed is not None, "no chunk ever reached a worker"
    assert run.returncode == 0, output
    assert "verified" in output
