"""The public verifier of a whole mix-net run record (``verify_record``, ``verify_file``).

Re-checks, in order, the DKG, every client submission, every mix step (batched per batch across
steps), the decryption set's shares and the published plaintexts, and optionally the analyzer's
estimate; stops at the first failing step. Imports only ``mpc.ristretto``, ``mpc.pools``,
``mpc.mixnet.schema`` and the checks of ``mpc.mixnet.proofs.shuffle.verifier`` and
``mpc.mixnet.proof_checks`` (never prover code); its checks carry their V-numbers (``mpc.mixnet.report``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import numpy as np

from mpc.mixnet.proof_checks import screen_submissions, submitters, verify_dkg
from mpc.mixnet.proofs.dleq import verify_dec_shares, weighted_key
from mpc.mixnet.proofs.shuffle.verifier import verify_mix_chain
from mpc.mixnet.report import Check, Report
from mpc.mixnet.schema import (
    EMBED_BYTES,
    Ciphertexts,
    VerifyError,
    blob_points,
    check_shape,
    dkg_digest,
    session_digest,
    shuffle_generators,
    users_whole,
)
from mpc.pools import process_pool
from mpc.ristretto import GroupError, chunk_ranges, map_chunks, sub


def _decode_rows(points: list[list[bytes]], width: int, bound: int) -> list[list[int] | None]:
    """Verifier's own decoding of embedded plaintexts (see ``mpc.elgamal`` module doc)."""
    nbytes = max(1, ((bound**width - 1).bit_length() + 7) // 8)
    comps = -(-nbytes // EMBED_BYTES)
    if len(points) != comps:
        raise VerifyError(f"plaintext has {len(points)} components, layout needs {comps}")
    out: list[list[int] | None] = []
    for i in range(len(points[0]) if points else 0):
        parts = []
        for j in range(comps):
            pt = points[j][i]
            if pt[0] & 1 or pt[31] > 0x3F:
                parts = None
                break
            parts.append(pt[1:31])
        if parts is None:
            out.append(None)
            continue
        v = int.from_bytes(b"".join(parts), "little")
        if v >= bound**width:
            out.append(None)
            continue
        row = []
        for _ in range(width):
            v, d = divmod(v, bound)
            row.append(d)
        out.append(row)
    return out


def check_mixers(mixes: list[dict[str, Any]], k: int, dset: Any) -> str | None:
    """Who mixed: step labels are servers ``1..k``, strictly increasing (so distinct), and every
    member of the decryption set mixed, so the privacy condition "one honest server among the
    ``t`` that decrypted" implies an honest mixer. ``None`` or what is wrong."""
    labels = [m.get("server") for m in mixes]
    if not labels:
        return "no mix server mixed"
    if not all(isinstance(j, int) and not isinstance(j, bool) and 1 <= j <= k for j in labels):
        return f"mix step labels {labels} must be servers 1..{k}"
    if any(a >= b for a, b in zip(labels, labels[1:])):
        return f"mix step labels {labels} must be distinct and increasing"
    if not isinstance(dset, list):
        return "decryption set missing"
    if unmixed := [j for j in dset if j not in labels]:
        return f"decryption set {dset} includes servers {unmixed} that did not mix ({labels})"
    return None


def verify_record(
    rec: dict[str, Any],
    workers: int = 1,
    progress: Callable[[str, float], None] | None = None,
    analyzer: Callable[[dict[str, np.ndarray]], Any] | None = None,
    pool: Executor | None = None,
) -> Report:
    """Verify a complete public record (``parties.mixnet.record.public_record`` format).

    ``progress(check_name, fraction)`` reports progress (0 at the start of each check, 1 at its
    end, and fractions in between for the long mix-chain checks), e.g. for a progress bar. If ``analyzer``
    is given and the record has an ``"estimate"``, the estimate is recomputed from the verified
    plaintext multiset (valid rows, int64 ``(m, width)`` per batch) and compared. Stops at the
    first failing step (later steps depend on it) and returns the report. ``workers > 1``
    spreads the group operations over a process pool (``pool`` if given).
    """
    if pool is None and workers > 1:
        with process_pool(workers) as own:
            return verify_record(rec, workers, progress, analyzer, own)
    rep = Report()
    say = progress or (lambda name, frac: None)

    def run(vid: str, name: str, count: int, fn: Callable[[], str | None]) -> bool:
        say(name, 0.0)
        t0 = time.perf_counter()
        try:
            err = fn()
        except VerifyError as exc:
            err = str(exc)
        except (GroupError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            err = f"malformed artifact: {type(exc).__name__}: {exc}"
        rep.add(Check(vid, name, err is None, count, err or "", time.perf_counter() - t0))
        say(name, 1.0)
        return err is None

    params = rec.get("params") if isinstance(rec, dict) else None
    if not isinstance(params, dict) or not isinstance(params.get("batches"), list):
        rep.add(Check("V-12", "record", False, 0, "record or its params are malformed"))
        return rep
    try:
        k, t = int(params["k"]), int(params["t"])
        specs = {b["name"]: b for b in params["batches"]}
        sid = str(rec["session_id"])
        check_shape(k, t)
        if not isinstance(params.get("servers"), list) or len(params["servers"]) != k:
            raise ValueError(f"params list {params.get('servers')!r} as servers, k = {k}")
    except (KeyError, TypeError, ValueError) as exc:
        rep.add(Check("V-12", "record", False, 0, f"malformed params: {exc}"))
        return rep
    state: dict[str, Any] = {}

    def dkg_check() -> str | None:
        pk, vks, qual = verify_dkg(sid, k, t, rec["dkg"])
        state.update(pk=pk, vks=vks, qual=qual)
        comms = {i: rec["dkg"]["commitments"][i] for i in qual}
        state["sess"] = session_digest(sid, params, pk, dkg_digest(comms))
        return None

    if not run("V-13", "dkg", k, dkg_check):
        return rep
    sess, pk = state["sess"], state["pk"]

    # client submissions -> accepted input lists
    inputs: dict[str, Ciphertexts] = {}

    def clients_check() -> str | None:
        parts = rec.get("inputs")
        if not isinstance(parts, list) or sum(int(p["count"]) for p in parts) != len(
            rec["submissions"]
        ):
            return "the client parties' input slices do not add up to the submissions"
        accepted, rejected = screen_submissions(
            sess, specs, rec["submissions"], workers, pool, parties=submitters(parts)
        )
        claimed = rec["accepted"]
        if [r["index"] for r in rec.get("rejected", [])] != [r["index"] for r in rejected]:
            return "published rejections differ from the recomputed ones"
        for name, spec in specs.items():
            idx = accepted[name]
            if list(claimed.get(name, [])) != idx:
                return f"batch {name!r}: published accepted set differs from the recomputed one"
            comps = spec["components"]
            subs = [rec["submissions"][i]["ct"] for i in idx]
            inputs[name] = Ciphertexts(
                [[c["a"][j] for c in subs] for j in range(comps)],
                [[c["b"][j] for c in subs] for j in range(comps)],
            )
        users = users_whole(parts, rejected)
        if rec.get("users") != users:
            return f"published user count {rec.get('users')!r}, recomputed {users}"
        return None

    subs_ = rec.get("submissions")
    if not run(
        "V-14", "client submissions", len(subs_) if isinstance(subs_, list) else 0, clients_check
    ):
        return rep

    current = dict(inputs)
    mixes = rec.get("mixes", [])
    if not isinstance(mixes, list) or not all(isinstance(m, dict) for m in mixes):
        rep.add(Check("V-16", "mixes", False, 0, "mixes must be a list of maps"))
        return rep
    if not run(
        "V-15", "mixers", len(mixes), lambda: check_mixers(mixes, k, rec.get("decryption_set"))
    ):
        return rep
    for name in specs:
        servers = [m.get("server") for m in mixes]
        check_name = f"mixes {servers} of {name}"

        def chain_check(name: str = name, label: str = check_name) -> str | None:
            lists, steps, proofs = [inputs[name]], [], []
            for mix in mixes:
                step = int(mix["server"])
                b = mix["batches"][name]
                out = Ciphertexts.from_obj(b["output"], f"mix[{step}].{name}.output")
                if inputs[name].n < 2:  # carried over unchanged, no proof
                    if out.to_obj() != inputs[name].to_obj() or b["proof"] is not None:
                        return f"mix[{step}].{name}: a batch of < 2 messages must be carried over"
                    continue
                lists.append(out)
                steps.append(step)
                proofs.append(b["proof"])
            if proofs:
                gens = shuffle_generators(sess, name, inputs[name].n)
                verify_mix_chain(
                    sess,
                    name,
                    pk,
                    lists,
                    steps,
                    proofs,
                    gens,
                    workers,
                    pool,
                    tick=lambda f: say(label, min(f, 0.999)),
                )
            current[name] = lists[-1]
            return None

        if not run("V-16", check_name, inputs[name].n * len(mixes), chain_check):
            return rep
    if not rec.get("mixes"):
        rep.add(Check("V-15", "mixers", False, 0, "no mix server mixed"))
        return rep

    dset = rec.get("decryption_set")
    if (
        not isinstance(dset, list)
        or len(dset) != t
        or not all(isinstance(j, int) and j in state["vks"] for j in dset)
        or sorted(set(dset)) != dset
    ):
        rep.add(
            Check(
                "V-17", "decryption set", False, 0, f"decryption set must be {t} servers with keys"
            )
        )
        return rep
    state["dset"] = dset
    plain: dict[str, list[list[int] | None]] = {}
    for name in specs:
        final = current[name]

        def dec_check(name: str = name, final: Ciphertexts = final) -> str | None:
            dset = state["dset"]
            shares = rec["decryption"][name]  # {server: {"d": [blobs], "proof": {...}}}
            if final.n == 0:  # a batch with no accepted submission: nothing to decrypt
                if shares != {} or rec["plaintexts"][name] != []:
                    return "an empty batch must have no shares and no plaintexts"
                plain[name] = []
                return None
            if sorted(shares) != dset:
                return f"shares of servers {sorted(shares)}, but the decryption set is {dset}"
            valid: dict[int, list[list[bytes]]] = {}
            for sid_ in dset:
                sh = shares[sid_]
                ds = [blob_points(x, final.n, f"share {sid_}") for x in sh["d"]]
                y = weighted_key(state["vks"][sid_], sid_, dset)
                err = verify_dec_shares(
                    sess, sid_, name, y, final.b, ds, sh["proof"], workers, pool, dset=dset
                )
                if err is not None:
                    return f"server {sid_}: {err}"
                valid[sid_] = ds
            pts = []
            nch = 4 * workers if pool is not None else 1
            for j in range(final.w):
                args = [
                    (final.a[j][s0:e0], [valid[i][j][s0:e0] for i in dset])
                    for s0, e0 in chunk_ranges(final.n, nch)
                ]
                pts.append(sum(map_chunks(_recombine_chunk, args, pool), []))
            spec = specs[name]
            rows = _decode_rows(pts, spec["width"], spec["bound"])
            pub = rec["plaintexts"][name]
            if len(pub) != len(rows):
                return f"published {len(pub)} plaintexts, decrypted {len(rows)}"
            for i, (r_, p_) in enumerate(zip(rows, pub)):
                if r_ != p_:
                    return f"published plaintext {i} differs from the decryption"
            plain[name] = rows
            return None

        if not run("V-18", f"decryption {name}", current[name].n, dec_check):
            return rep
    state["plaintexts"] = plain
    if analyzer is not None and "estimate" in rec:

        def estimate_check() -> str | None:
            batches = {
                name: np.array([r for r in rows if r is not None], dtype=np.int64).reshape(
                    -1, specs[name]["width"]
                )
                for name, rows in plain.items()
            }
            ours = analyzer(batches)
            if not _same(ours, rec["estimate"]):
                return "published estimate differs from the analyzer's output on the plaintexts"
            return None

        run("V-21", "estimate", len(specs), estimate_check)
    return rep


def _recombine_chunk(a: list[bytes], ds: list[list[bytes]]) -> list[bytes]:
    """``a - sum_k d_k`` elementwise (shares are pre-weighted; the verifier's own recombination)."""
    acc = a
    for d in ds:
        acc = [sub(x, y) for x, y in zip(acc, d)]
    return acc


def _same(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """Structural equality with a relative tolerance for floats (JSON-like values)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k], rel) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == b or abs(a - b) <= rel * max(abs(a), abs(b))
    return a == b


def verify_file(path: str, workers: int = 1, show_progress: bool = True) -> Report:
    """Verify a record stored as canonical CBOR at ``path`` with a rich progress bar."""
    import cbor2
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with open(path, "rb") as fh:
        try:
            rec = cbor2.load(fh)
        except Exception as exc:  # cbor2 raises several types
            rep = Report()
            rep.add(Check("V-10", "record", False, 0, f"unreadable CBOR: {exc}"))
            return rep
    if not show_progress:
        return verify_record(rec, workers)
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn()) as bar:
        tasks: dict[str, Any] = {}

        def progress(name: str, frac: float) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=1.0)
            bar.update(tasks[name], completed=frac)

        return verify_record(rec, workers, progress)


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Verify a mix-net public record (CBOR file).")
    ap.add_argument("record")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    report = verify_file(args.record, args.workers)
    print(json.dumps(report.as_dict(), indent=2))
    raise SystemExit(0 if report.ok else 1)
