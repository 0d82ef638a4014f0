"""Transport benchmark on loopback with TLS 1.3: our full stack (frames, seals, transcripts,
ledger) next to a bare asyncio TLS stream baseline, in one run.

  small: 3 parties, 10^4 messages of 64 B (two senders -> one receiver)
  bulk:  2 parties, one 100 MB message

Usage: python scripts/bench_transport.py [--json] [--messages N] [--bulk-mb M]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mpc.pools import peak_rss  # noqa: E402
from parties.launcher import free_ports  # noqa: E402
from parties.runtime.cluster import Cluster, PartySpec, dump_cluster, load_cluster, new_session_id  # noqa: E402
from parties.runtime.cost_ledger import memory_peaks  # noqa: E402
from parties.runtime.keys import make_party_dirs  # noqa: E402


async def party_main(args: argparse.Namespace) -> None:
    from parties.runtime.transport import Node

    cluster = load_cluster(args.cluster)
    node = Node(cluster, args.name, Path(args.keys), Path(args.out))
    names = [p.name for p in cluster.parties]
    out: dict[str, float] = {}
    cpu0 = 0.0
    if args.mode == "small":
        recv_name, senders = names[-1], names[:-1]
        peers = set(senders) if args.name == recv_name else {recv_name}
        await node.start(peers)
        node.phase("bench")
        per_sender = args.messages // len(senders)
        payload = os.urandom(64)
        cpu0 = time.process_time()
        if args.name == recv_name:
            t0 = time.perf_counter()
            for s in senders:
                await node.send(s, "go", b"")
            for s in senders:
                for _ in range(per_sender):
                    await node.recv(s, "m")
            out["seconds"] = time.perf_counter() - t0
            out["messages"] = per_sender * len(senders)
        else:
            await node.recv(recv_name, "go")
            for _ in range(per_sender):
                await node.send(recv_name, "m", payload)
    else:
        a, b = names
        await node.start({b} if args.name == a else {a})
        node.phase("bench")
        cpu0 = time.process_time()
        if args.name == a:
            data = os.urandom(args.bulk_mb * 1_000_000)
            t0 = time.perf_counter()
            await node.send(b, "bulk", data)
            await node.recv(b, "ack")
            out["seconds"] = time.perf_counter() - t0
            out["bytes"] = len(data)
        else:
            got = await node.recv(a, "bulk")
            await node.send(a, "ack", str(len(got)).encode())
    out["cpu_s"] = time.process_time() - cpu0
    out["peak_rss_bytes"] = peak_rss()
    await node.close()
    Path(f"{args.result}.{args.name}").write_text(json.dumps(out))


def run_ours(mode: str, n_parties: int, messages: int, bulk_mb: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        names = [f"p{i}" for i in range(n_parties)]
        ports = free_ports(n_parties)
        cluster = Cluster(
            new_session_id(),
            "bench",
            "trusted",
            [PartySpec(n, "x", "127.0.0.1", p) for n, p in zip(names, ports)],
            phase_timeout=300,
            max_frame=16 << 20,
        )
        (tmp_path / "cluster.toml").write_text(dump_cluster(cluster))
        make_party_dirs(cluster, tmp_path / "keys")
        result = tmp_path / "result.json"
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--party",
                    n,
                    "--mode",
                    mode,
                    "--cluster",
                    str(tmp_path / "cluster.toml"),
                    "--keys",
                    str(tmp_path / "keys" / n),
                    "--out",
                    str(tmp_path / "run"),
                    "--result",
                    str(result),
                    "--messages",
                    str(messages),
                    "--bulk-mb",
                    str(bulk_mb),
                ]
            )
            for n in names
        ]
        for p in procs:
            if p.wait(timeout=600) != 0:
                raise RuntimeError(f"benchmark party exited with {p.returncode}")
        per = {n: json.loads(Path(f"{result}.{n}").read_text()) for n in names}
        main_party = names[-1] if mode == "small" else names[0]
        out = dict(per[main_party])
        out["cpu_s_by_party"] = {n: round(v["cpu_s"], 3) for n, v in per.items()}
        out["peak_rss_bytes_by_party"] = {n: v["peak_rss_bytes"] for n, v in per.items()}
        return out


async def baseline(mode: str, messages: int, bulk_mb: int, keydir: Path) -> dict[str, float]:
    """Bare asyncio TLS 1.3 streams, 4-byte length prefixes, no signatures or transcripts."""
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.minimum_version = ssl.TLSVersion.TLSv1_3
    sctx.load_cert_chain(keydir / "p0" / "certs" / "p0.crt", keydir / "p0" / "p0.key")
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.check_hostname = False
    cctx.verify_mode = ssl.CERT_NONE
    done = asyncio.get_running_loop().create_future()
    expected = messages if mode == "small" else 1

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got = 0
        while got < expected:
            n = int.from_bytes(await reader.readexactly(4), "big")
            await reader.readexactly(n)
            got += 1
        writer.write(b"k")
        await writer.drain()
        writer.close()
        done.set_result(None)

    srv = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=sctx)
    port = srv.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=cctx)
    t0 = time.perf_counter()
    if mode == "small":
        msg = (64).to_bytes(4, "big") + os.urandom(64)
        for _ in range(messages):
            writer.write(msg)
            await writer.drain()
    else:
        data = os.urandom(bulk_mb * 1_000_000)
        writer.write(len(data).to_bytes(4, "big"))
        view = memoryview(data)
        for i in range(0, len(data), 1 << 20):
            writer.write(view[i : i + (1 << 20)])
            await writer.drain()
    await reader.readexactly(1)
    await done
    secs = time.perf_counter() - t0
    writer.close()
    srv.close()
    return {"seconds": secs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--bulk-mb", type=int, default=100)
    ap.add_argument("--party", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--cluster", help=argparse.SUPPRESS)
    ap.add_argument("--keys", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.party:
        args.name = args.party
        asyncio.run(party_main(args))
        return
    small = run_ours("small", 3, args.messages, args.bulk_mb)
    bulk = run_ours("bulk", 2, args.messages, args.bulk_mb)
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(new_session_id(), "b", "t", [PartySpec("p0", "x", "127.0.0.1", 1)])
        make_party_dirs(cluster, Path(tmp))
        base_small = asyncio.run(baseline("small", args.messages, args.bulk_mb, Path(tmp)))
        base_bulk = asyncio.run(baseline("bulk", args.messages, args.bulk_mb, Path(tmp)))
    rate = small["messages"] / small["seconds"]
    thr = bulk["bytes"] / bulk["seconds"] / 1e6
    report = {
        "small_messages": {
            "parties": 3,
            "messages": small["messages"],
            "payload_bytes": 64,
            "ours_messages_per_s": round(rate),
            "ours_cpu_us_per_message": {
                n: round(c / small["messages"] * 1e6, 1) for n, c in small["cpu_s_by_party"].items()
            },
            "ours_peak_rss_bytes_by_party": small["peak_rss_bytes_by_party"],
            "baseline_bare_tls_messages_per_s": round(args.messages / base_small["seconds"]),
            "target_messages_per_s": 20_000,
            "meets_target": rate >= 20_000,
        },
        "bulk": {
            "parties": 2,
            "megabytes": args.bulk_mb,
            "ours_MB_per_s": round(thr, 1),
            "ours_cpu_s_by_party": bulk["cpu_s_by_party"],
            "ours_peak_rss_bytes_by_party": bulk["peak_rss_bytes_by_party"],
            "baseline_bare_tls_MB_per_s": round(args.bulk_mb / base_bulk["seconds"], 1),
            "target_MB_per_s": 100,
            "meets_target": thr >= 100,
        },
        "notes": "ours = mutual TLS 1.3 + CBOR frames + Ed25519-sealed hash chains + signed "
        "transcripts + cost ledger, each party its own process; baseline = one "
        "asyncio TLS stream with length prefixes only, in one process",
        "cpu_count": os.cpu_count(),
        "peak_rss_per_party": {"baseline (this process)": memory_peaks()},
    }
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for k, v in report.items():
            print(k, v)


if __name__ == "__main__":
    main()
