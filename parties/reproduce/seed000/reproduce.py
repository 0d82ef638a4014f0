"""``sdp reproduce seed000 [--quick] --out DIR``: run the experiments, then write the report.

The experiment bodies are in :mod:`.runs`, the report in :mod:`.report` (which reads the grid
the run used from ``runs.EPS_GRID``); this entry point is the only module that imports both.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from parties.reproduce.seed000 import runs as S
from parties.reproduce.seed000.report import write_report
from parties.reproduce.seed000.runs import DATASETS, PAPER_GRID
from protocols.datasets import categorical as D


def main(argv: list[str]) -> int:
    """Entry point for ``sdp reproduce seed000``."""
    ap = argparse.ArgumentParser(prog="sdp reproduce seed000", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 repetitions per point (CI)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per point (default 20)")
    ap.add_argument(
        "--data-dir", default=None, help="raw datasets folder (default ../shared/datasets)"
    )
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated subset")
    ap.add_argument("--eps", default=None, help="comma-separated eps_c subset (default 0.1..1.0)")
    args = ap.parse_args(argv)
    if args.eps:
        try:
            S.EPS_GRID = tuple(sorted(round(float(x), 1) for x in args.eps.split(",") if x))
        except ValueError:
            ap.error(f"--eps expects numbers like 0.5,1.0, got {args.eps!r}")
        if not S.EPS_GRID or not set(S.EPS_GRID) <= set(PAPER_GRID):
            ap.error(f"--eps values must be among {PAPER_GRID}")
    else:
        S.EPS_GRID = PAPER_GRID
    reps = args.reps or (2 if args.quick else 20)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    names = [s for s in args.datasets.split(",") if s]
    for s in names:
        if s not in DATASETS:
            ap.error(f"unknown dataset {s!r}; choose from {', '.join(DATASETS)}")
    loaded: dict[str, D.CategoricalDataset] = {}
    for s in names:
        try:
            if s == "adult":
                loaded[s] = D.load_adult(args.data_dir)
            else:
                loaded[s] = D.load_dataset(s, args.data_dir)
        except FileNotFoundError as exc:
            print(f"seed000: skipping {s}: {exc}")
    if not loaded:
        print("seed000: no dataset available")
        return 2
    print(f"seed000: {reps} repetitions, datasets {', '.join(loaded)}")
    sim = S.run_all(reps, loaded)
    (out / "results.json").write_text(json.dumps(sim))
    ok = write_report(out, sim, loaded, reps, args.quick, time.time() - t0)
    print(
        f"seed000: report at {out / 'report.md'} ({time.time() - t0:.0f} s); table 12.1 match: {ok}"
    )
    return 0 if ok else 1
