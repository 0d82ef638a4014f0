"""The runtime's configuration error and its "did you mean" hint (shared by the cluster file
and the shuffler registry, ``parties.runtime.backend``)."""

from __future__ import annotations

import difflib


class ClusterError(ValueError):
    """The cluster file is missing, malformed or inconsistent."""


def did_you_mean(word: str, known: list[str] | tuple[str, ...]) -> str:
    """ "; did you mean X?" for the closest of ``known`` ("" when none is close)."""
    close = difflib.get_close_matches(word, list(known), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
