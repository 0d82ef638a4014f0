"""Known-answer vectors of the specification (docs/spec/, spec version 1): the command line.

``generate`` (``spec_vectors_generate``) stores the honest runs under ``tests/vectors/spec/``
(``run/``: two-round LDP GFIM mix-net; ``grr-run/``; ``mpc-run/``), their trust anchors, test
keys (``keys/``, ``keys-mpc/``: TEST VECTORS ONLY, so that invalid run directories can be
re-signed by a party that controls its own key) and ``encodings.json``; ``generate-mpc`` only
the MPC run. ``variant NAME OUT`` writes an honest variant of ``run/`` (``VARIANTS``), which
must verify; ``corrupt NAME OUT`` writes an invalid run directory (``CORRUPTIONS`` /
``MPC_CORRUPTIONS`` in ``spec_vectors_corruptions``, each with the numbered check it must
fail); ``list`` prints the names and checks as JSON.

Layout without circles: ``spec_vectors_paths`` <- ``spec_vectors_corruptions`` <-
``spec_vectors_generate`` <- this CLI (which re-exports the recipe tables for the tests).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, when imported

from spec_vectors_corruptions import (  # noqa: E402
    CORRUPTIONS,
    MPC_CORRUPTIONS,
    VARIANTS,
    corrupt,
    variant,
)

__all__ = ["CORRUPTIONS", "MPC_CORRUPTIONS", "VARIANTS", "corrupt", "main", "variant"]


def main(argv: list[str]) -> int:
    if argv[:1] in (["generate"], ["generate-mpc"]):
        from spec_vectors_generate import generate, generate_mpc

        if argv[0] == "generate":
            generate(int(argv[1]) if len(argv) > 1 else 100)
        else:
            generate_mpc()
    elif argv[:1] == ["corrupt"] and len(argv) == 3:
        print(corrupt(argv[1], Path(argv[2])))
    elif argv[:1] == ["variant"] and len(argv) == 3:
        variant(argv[1], Path(argv[2]))
    elif argv[:1] == ["list"]:
        print(
            json.dumps({k: v[1] for k, v in {**CORRUPTIONS, **MPC_CORRUPTIONS}.items()}, indent=1)
        )
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
