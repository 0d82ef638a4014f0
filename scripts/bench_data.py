"""Benchmark the chunked data readers on a generated gzip CSV; prints JSON.

    python scripts/bench_data.py [--rows 10000000] [--path /tmp/sdp-bench-10M.csv.gz]

Generates (once; reused when present) a categorical survey-like CSV of ``--rows`` rows: an id
column the schema does not use and six attributes (a list domain, a numeric column binned at
public edges, an integer range, ...), with a missing value every 10,007 rows and an
out-of-domain value every 100,003 rows, gzip-compressed. Then, each in a fresh process so that
peak RSS is the reader's own:

* ``stream``: ``DataReader`` over the whole file (chunks discarded): rows/s and peak RSS, for
  the full file and for its first tenth (bounded memory: the two peaks are about equal);
* ``read_all``: ``read_dataset`` (all kept records concatenated: int8, n x 6);
* ``baseline``: Python's ``csv`` module with a dict lookup per value on the first 10^6 rows.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from parties.runtime.cost_ledger import bench_peak_rss  # noqa: E402

SCHEMA = """
schema = 1
kind = "categorical"
name = "bench survey"

[format]
delimiter = ","
header = true

[[attribute]]
name = "region"
values = ["north", "south", "east", "west", "centre"]

[[attribute]]
name = "age"
bins = [16, 25, 35, 45, 55, 65, 100]

[[attribute]]
name = "education"
values = ["none", "primary", "secondary", "vocational", "bachelor", "master", "doctorate"]

[[attribute]]
name = "household"
range = [1, 8]
on_out_of_domain = "clip"

[[attribute]]
name = "employment"
values = ["employed", "self-employed", "unemployed", "student", "retired", "other"]

[[attribute]]
name = "satisfaction"
range = [1, 5]
"""

LABELS = {
    "region": ["north", "south", "east", "west", "centre"],
    "education": ["none", "primary", "secondary", "vocational", "bachelor", "master", "doctorate"],
    "employment": ["employed", "self-employed", "unemployed", "student", "retired", "other"],
}


def generate(path: Path, rows: int, seed: int = 0, chunk: int = 1_000_000) -> None:
    """Write the benchmark CSV (gzip level 1) in chunks of ``chunk`` rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wb", compresslevel=1) as fh:
        fh.write(b"id,region,age,education,household,employment,satisfaction\n")
        for s in range(0, rows, chunk):
            m = min(chunk, rows - s)
            ids = pa.array(np.arange(s, s + m).astype(str))
            cols = [ids]
            for name in ("region", "age", "education", "household", "employment", "satisfaction"):
                if name in LABELS:
                    codes = rng.integers(0, len(LABELS[name]), m)
                    col = pc.take(pa.array(LABELS[name]), pa.array(codes))
                elif name == "age":
                    col = pa.array(rng.integers(16, 100, m).astype(str))
                elif name == "household":
                    col = pa.array(rng.integers(1, 9, m).astype(str))
                else:
                    col = pa.array((rng.integers(1, 6, m)).astype(str))
                cols.append(col)
            line_no = np.arange(s, s + m)
            miss = pa.array(line_no % 10_007 == 5)
            cols[3] = pc.if_else(miss, "", cols[3])
            ood = pa.array(line_no % 100_003 == 7)
            cols[1] = pc.if_else(ood, "atlantis", cols[1])
            cols[-1] = pc.binary_join_element_wise(cols[-1], "\n", "")
            lines = pc.binary_join_element_wise(*cols, ",")
            off = np.frombuffer(lines.buffers()[1], dtype=np.int32)
            off = off[lines.offset : lines.offset + len(lines) + 1]
            fh.write(memoryview(lines.buffers()[2])[off[0] : off[-1]])
    os.replace(tmp, path)


def _peak_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited over exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(mode: str, path: str, schema_path: str, limit: int) -> dict:
    """One measurement, run in a child process (see ``--child``)."""
    from protocols.datasets.readers import DataReader, read_dataset
    from protocols.datasets.schema import load_schema

    schema = load_schema(schema_path)
    base = _peak_mb()
    t0 = time.perf_counter()
    if mode == "stream":
        reader = DataReader(path, schema)
        kept = 0
        for chunk in reader:
            kept += chunk.n
            if limit and reader.report.rows_total >= limit:
                break
        rows = reader.report.rows_total
        extra = {"excluded": reader.report.rows_excluded}
    elif mode == "read_all":
        data = read_dataset(path, schema)
        rows, kept = data.report.rows_total, data.n
        extra = {
            "records_dtype": str(data.records.dtype),
            "records_mb": data.records.nbytes / 2**20,
        }
        extra["excluded"] = data.report.excluded
    else:  # baseline: csv module + dict lookups on the first `limit` rows
        import csv

        from protocols.datasets.schema_model import BinsDomain, RangeDomain

        maps = []
        for a in schema.attributes:
            if isinstance(a.domain, RangeDomain | BinsDomain):
                maps.append(None)
            else:
                maps.append({v: i for i, v in enumerate(a.domain.values)})
        edges = np.asarray(schema.attributes[1].domain.edges)
        rows = kept = 0
        with gzip.open(path, "rt", newline="") as fh:
            rd = csv.reader(fh)
            next(rd)
            out = []
            for row in rd:
                rows += 1
                try:
                    rec = []
                    for j, mp in enumerate(maps):
                        v = row[j + 1].strip()
                        if mp is not None:
                            rec.append(mp[v])
                        elif j == 1:
                            rec.append(int(np.searchsorted(edges, float(v), side="right")) - 1)
                        else:
                            rec.append(int(v))
                    out.append(rec)
                    kept += 1
                except (KeyError, ValueError, IndexError):
                    pass
                if rows >= limit:
                    break
        extra = {}
    dt = time.perf_counter() - t0
    return {
        "mode": mode,
        "rows": rows,
        "kept": kept,
        "seconds": round(dt, 3),
        "rows_per_s": round(rows / dt),
        "peak_rss_mb": round(_peak_mb(), 1),
        "rss_before_mb": round(base, 1),
        **extra,
    }


def _child(mode: str, path: str, schema_path: str, limit: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, path, schema_path, str(limit)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--path", default=None)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        mode, path, schema_path, limit = a.child
        print(json.dumps(measure(mode, path, schema_path, int(limit))))
        return
    path = Path(a.path or f"/tmp/sdp-bench-{a.rows}.csv.gz")
    schema_path = path.with_suffix(".toml")
    schema_path.write_text(SCHEMA)
    t0 = time.perf_counter()
    if not path.exists():
        generate(path, a.rows)
    gen_s = time.perf_counter() - t0
    res = {
        "file": str(path),
        "rows": a.rows,
        "file_mb_gzip": round(path.stat().st_size / 2**20, 1),
        "generate_seconds": round(gen_s, 1),
        "stream_first_tenth": _child("stream", str(path), str(schema_path), a.rows // 10),
        "stream": _child("stream", str(path), str(schema_path), 0),
        "read_all": _child("read_all", str(path), str(schema_path), 0),
        "baseline_csv_module": _child("baseline", str(path), str(schema_path), min(a.rows, 10**6)),
    }
    res["speedup_vs_csv_module"] = round(
        res["stream"]["rows_per_s"] / res["baseline_csv_module"]["rows_per_s"], 1
    )
    res["peak_rss_per_party"] = bench_peak_rss()
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
