"""Where the specification's known-answer vectors live, and the canonical JSON they are hashed in.

Shared by the generator (``spec_vectors_generate``), the corruption recipes
(``spec_vectors_corruptions``) and the CLI (``make_spec_vectors.py``); imports none of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VEC = ROOT / "tests" / "vectors" / "spec"
RUN = VEC / "run"
KEYS = VEC / "keys"
MPC_RUN = VEC / "mpc-run"
MPC_KEYS = VEC / "keys-mpc"
MPC_TRUST = VEC / "mpc-run.trust.json"
TRUST = VEC / "run.trust.json"


def canonical(obj: Any) -> bytes:
    """Sorted keys, no spaces, ASCII: the JSON form transcript entries are hashed in."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
