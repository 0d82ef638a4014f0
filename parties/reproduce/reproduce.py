"""``sdp reproduce SEED [--quick] --out DIR``: dispatch to the seed's experiment module."""

from __future__ import annotations

import importlib
import sys

SEEDS: dict[str, str] = {
    "seed000": "parties.reproduce.seed000.reproduce",
    "seed000-marginals": "parties.reproduce.seed000.marginals",
    "seed001": "parties.reproduce.seed001.runs",
    "seed002": "parties.reproduce.seed002.runs",
    "seed003": "parties.reproduce.seed003.runs",
    "splitmix": "parties.reproduce.seed004.splitmix",
    "seed004": "parties.reproduce.seed004.runs",
}


def main(argv: list[str]) -> int:
    """Run one reproduction; each module exposes ``main(argv) -> int``."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: sdp reproduce SEED [--quick] --out DIR\n\nseeds: " + ", ".join(SEEDS))
        return 0
    seed, rest = argv[0], argv[1:]
    if seed not in SEEDS:
        print(f"sdp reproduce: unknown seed {seed!r}; known: {', '.join(SEEDS)}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(SEEDS[seed])
    except ModuleNotFoundError as exc:
        if exc.name == SEEDS[seed]:
            print(f"sdp reproduce: {seed} is not implemented yet", file=sys.stderr)
            return 2
        raise
    return int(module.main(rest) or 0)
