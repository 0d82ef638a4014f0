"""Run plan of the two-site transaction publisher (``sdp run txpub``, spec 001).

Parties ``A`` (the master site) and ``B``: each loads the vertically partitioned table and keeps
only its own item columns; Levenberg-Marquardt iterations compute every cross-site term with the
Paillier sum-of-scalar-products protocol (``parties.txpub.gs_sites``). Phases: ``setup``,
``lm``/k for iteration k (so ``sdp costs --by-round`` shows rounds and bytes per iteration), and
``publish``. Site A publishes the sampled counts. What each site learns is documented in
``parties.txpub.gs_sites`` and ``mpc.scalar_product``: no more security than the paper's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parties.runtime import codec
from parties.runtime.cluster import Cluster
from parties.runtime.codec import to_jsonable
from parties.runtime.link import PeerError

ROLES = {"site-a": "A", "site-b": "B"}


class TxpubPlan:
    """Site A (master) <-> site B."""

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        return [("A", "site-a"), ("B", "site-b")]

    def peers(self, cluster: Cluster, name: str) -> set[str]:
        return {"A", "B"} - {name}

    def validate(self, params: dict[str, Any]) -> None:
        """Fail early on unknown parameters or values."""
        from parties.txpub.entry import PARTY_DEFAULTS

        unknown = set(params) - set(PARTY_DEFAULTS)
        if unknown:
            raise ValueError(
                f"txpub: unknown parameters {sorted(unknown)}; known: "
                f"{', '.join(sorted(PARTY_DEFAULTS))}"
            )
        p = {**PARTY_DEFAULTS, **params}
        if p["solver"] not in ("gs", "ls"):
            raise ValueError(f"txpub: solver must be gs or ls, got {p['solver']!r}")

    def evaluate(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """Launcher-side evaluation: the centralized reference and the feasibility checker."""
        import numpy as np

        from parties.txpub.entry import PARTY_DEFAULTS
        from protocols.txpub.data import load_dataset
        from protocols.txpub.model import check_feasible
        from protocols.txpub.plaintext import reference_counts

        p = {**PARTY_DEFAULTS, **params}
        data = load_dataset(p)
        eps, delta = float(p["epsilon"]), float(p["delta"])
        published = np.asarray(result["estimate"]["counts"], dtype=float)
        out: dict[str, Any] = {
            "feasible": check_feasible(data.D, published, eps, delta).as_dict(),
        }
        run_dir = Path(result["_run_dir"])
        counts = np.concatenate(
            [
                np.asarray(
                    json.loads((run_dir / "sites" / f"{r}.json").read_text())["counts_continuous"]
                )
                for r in ("A", "B")
            ]
        )
        if p["solver"] == "gs":
            ref = reference_counts(data, eps, delta)
            # relative to the count, with one transaction as the floor (a count of 0 vs 1e-13)
            rel = np.abs(counts - ref) / np.maximum(np.abs(ref), 1.0)
            out["max_relative_difference_to_reference"] = float(rel.max())
            rows = [[i, float(counts[i]), float(ref[i])] for i in range(len(ref))]
            out["table"] = {
                "title": "txpub: secure GS counts vs centralized reference",
                "columns": ["item", "secure GS", "reference"],
                "rows": rows,
            }
        return out

    async def run(self, node: Any, cluster: Cluster) -> None:
        from parties.txpub.entry import party_main

        role = ROLES.get(cluster.party(node.name).role)
        if role is None or role != node.name:
            raise PeerError(
                f"txpub parties must be A (role site-a) and B (role site-b), got "
                f"{node.name} with role {cluster.party(node.name).role}"
            )
        try:
            res = to_jsonable(await party_main(node, role, dict(cluster.params)))
        except ValueError as exc:
            raise PeerError(str(exc)) from None
        res.pop("feasible", None)  # evaluation belongs to the launcher (it needs both tables)
        # each site keeps its own (private) continuous counts in its own run directory
        own = Path(node.run_dir) / "sites"
        own.mkdir(parents=True, exist_ok=True)
        (own / f"{role}.json").write_text(
            json.dumps(
                {"counts_continuous": res["counts_own_continuous"], "counts": res["counts_own"]}
            )
        )
        if role != "A":
            return
        node.phase("publish", 2)
        estimate = {"counts": res["counts"], "published_rows": res.get("published_rows")}
        digest = node.publish("estimate", codec.dumps(estimate))
        result = {
            "protocol": cluster.protocol,
            "session": cluster.session,
            "params": dict(cluster.params),
            "estimate": estimate,
            "estimate_sha256": digest,
            "lm": res.get("lm"),
            "secure_protocol": res.get("protocol"),
            "history": res.get("history"),
        }
        path = Path(node.run_dir) / "result.json"
        path.write_text(json.dumps(to_jsonable(result), indent=1))
