"""Public parameters of a mix-net run and its session digest (the root of every challenge).

A batch is given by plain sizes: its name, the row width ``w`` and the bound of every entry;
``components`` (group elements per ciphertext) follows from them (``mpc.elgamal.message_layout``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpc.elgamal import message_layout
from mpc.mixnet.schema import check_shape, dkg_digest, session_digest


def run_params(
    servers: Sequence[str], t: int, batches: Sequence[tuple[str, int, int]]
) -> dict[str, Any]:
    """The public parameters hashed into every challenge: ``{k, t, servers, batches: [{name,
    width, bound, components}]}`` from the server names, the threshold and ``(name, width,
    bound)`` per batch; raises ``MixnetShapeError`` unless ``2 <= t <= k``."""
    check_shape(len(servers), t)
    return {
        "k": len(servers),
        "t": t,
        "servers": list(servers),
        "batches": [
            {
                "name": name,
                "width": width,
                "bound": bound,
                "components": message_layout(width, bound)[1],
            }
            for name, width, bound in batches
        ],
    }


def session_of(session_id: str, params: dict[str, Any], dkg_record: dict[str, Any]) -> bytes:
    """Session digest from the public parameters and the public DKG record."""
    comms = {i: dkg_record["commitments"][i] for i in dkg_record["qual"]}
    return session_digest(session_id, params, dkg_record["pk"], dkg_digest(comms))
