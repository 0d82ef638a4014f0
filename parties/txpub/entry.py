"""Party entry point of the two-site transaction publisher (``sdp run txpub``): one site.

``party_main(ctx, role, params)`` loads the table from the run parameters (``PARTY_DEFAULTS``),
keeps the site's own columns and runs the GS sites (``parties.txpub.gs_sites``) or the LS sites
(``parties.txpub.publish``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from parties.txpub.gs_sites import site_a, site_b
from parties.txpub.publish import ls_site_a, ls_site_b
from protocols.txpub.data import load_dataset
from protocols.txpub.model import check_feasible, theta

PARTY_DEFAULTS: dict[str, Any] = {
    "dataset": "t10i4d100k",
    "transactions": 2000,
    "items": 20,
    "epsilon": 0.336,
    "delta": 0.5,
    "solver": "gs",
    "mode": "fb",
    "form": "v",
    "key_bits": 2048,
    "protocol": "optimized",
    "theta_mode": "paper",
    "seed": 0,
    "workers": 1,
    "method": "newton",
}


async def party_main(ctx: Any, role: str, params: dict[str, Any]) -> dict[str, Any]:
    """Entry point for the party runtime: ``role`` 'A' or 'B'; returns a JSON-able result.

    Each party loads the table from ``params`` (see ``PARTY_DEFAULTS``) and keeps only its own
    columns; A's result holds the published counts, the joined sample size, the LM summary and
    per-iteration history (seconds, bytes, Paillier operation counts).
    """
    p = {**PARTY_DEFAULTS, **params}
    unknown = set(params) - set(PARTY_DEFAULTS)
    if unknown:
        raise ValueError(f"txpub: unknown parameters {sorted(unknown)}")
    if role not in ("A", "B"):
        raise ValueError(f"txpub: role must be 'A' or 'B', got {role!r}")
    data = load_dataset(p)
    eps, delta = float(p["epsilon"]), float(p["delta"])
    peer = "B" if role == "A" else "A"
    cols = data.site(role)
    if p["solver"] == "ls":
        fn = ls_site_a if role == "A" else ls_site_b
        r = await fn(
            ctx,
            cols,
            eps,
            delta,
            data.ids,
            peer=peer,
            theta_mode=p["theta_mode"],
            seed=int(p["seed"]),
        )
    elif p["solver"] == "gs":
        if role == "A":
            r = await site_a(
                ctx,
                cols,
                theta(eps, delta),
                peer=peer,
                mode=p["mode"],
                form=p["form"],
                key_bits=int(p["key_bits"]),
                protocol=p["protocol"],
                ids=data.ids,
                seed=int(p["seed"]),
                workers=int(p["workers"]),
                method=p["method"],
            )
        else:
            r = await site_b(
                ctx,
                cols,
                peer=peer,
                form=p["form"],
                ids=data.ids,
                seed=int(p["seed"]),
                key_bits=int(p["key_bits"]),
            )
    else:
        raise ValueError(f"txpub: solver must be 'gs' or 'ls', got {p['solver']!r}")
    out: dict[str, Any] = {
        "role": role,
        "counts_own": r.counts_floor.tolist(),
        "counts_own_continuous": np.asarray(r.counts, dtype=float).tolist(),
        "lm": r.lm,
        "protocol": r.protocol,
    }
    if r.published is not None:
        out["counts"] = r.published["counts"].tolist()
        out["published_rows"] = int(len(r.published["ids"]))
        out["feasible"] = (
            check_feasible(data.D, r.published["counts"], eps, delta).as_dict()
            if role == "A"
            else None
        )  # evaluation only (the launcher's 'truth'), not a party step
        out["history"] = r.history
    return out
