"""The public parameters a reproduction derives from its bundled data, as the paper did.

Differential privacy needs every parameter that shapes a release to be public and fixed before
the data are seen (``docs/privacy.md``). The reproductions copy the papers' setups, some of
which take such parameters from the data; they are kept for the reproductions only (``sdp run``
on a user's data takes every parameter from the public schema or the run), and each report
lists them under the heading below, so nobody mistakes a reproduction for a private release.
"""

from __future__ import annotations

HEADING = "## Public parameters derived from the data, as in the paper, not private"

_PARAMETERS: dict[str, list[str]] = {
    "adult": [
        "Adult: the quantile edges of fnlwgt and capital gain/loss and every categorical domain "
        "(frozen in `protocols/data/schemas.json`, computed once from the data)",
    ],
    "kosarak": [
        "Kosarak: the 8 most frequent items as the binary attributes (frozen), and for set-valued "
        "runs the item-id range 1..17,034 of the head file (frozen)",
    ],
    "census-income": [
        "Census-Income (KDD): each categorical domain is the set of values present (not frozen); "
        "for HP-SDP the 914 most frequent job codes (frozen)",
    ],
    "ell": [
        "GFIM and LDPMiner: the padding length `ell` is the 90th percentile of the users' set "
        "sizes (one user can move it; `sdp run gfim` takes `ell` from the run or the schema "
        "instead and refuses to read it from data)",
    ],
    "sgd": [
        "SGD evaluation: incomes are labelled by the mean of the training split (evaluation only, "
        "not released)",
    ],
    "delta": [
        "delta = 1/n where the paper sets it so (the project's default for user data is "
        "min(1e-6, 0.01/n), strictly below 1/n)",
    ],
}


def paper_parameters_section(keys: list[str]) -> list[str]:
    """Markdown lines: the heading and one bullet per parameter family in ``keys``."""
    unknown = [k for k in keys if k not in _PARAMETERS]
    if unknown:
        raise ValueError(f"paper parameters: unknown keys {unknown}; known {sorted(_PARAMETERS)}")
    lines = [HEADING, ""]
    for k in keys:
        lines += [f"- {text}" for text in _PARAMETERS[k]]
    lines += [
        "",
        "These reproduce the paper's setup; they are not differentially private and are never "
        "used for a user's own data (`docs/privacy.md`, `docs/data.md`).",
        "",
    ]
    return lines
