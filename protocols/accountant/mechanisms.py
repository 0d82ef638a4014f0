"""The local randomizers the accountant knows, and the parameters that shape them.

Every bound's forward and inverse take a mechanism name and its shape: ``k`` (k-RR's domain
size), ``g`` (OLH's hash range), ``d`` (the domain of the unary encodings). They are declared
here once (:class:`Shape`) and passed on with ``**shape`` to the function that reads
them (``vr_parameters``, ``decomposition_delta``), whose explicit keywords refuse any other.
"""

from __future__ import annotations

from typing import TypedDict

MECHANISMS = ("grr", "olh", "oue", "sue", "hadamard", "generic")


class Shape(TypedDict, total=False):
    """The shape parameters of a mechanism (module docstring); None or absent = not given."""

    k: int | None
    g: int | None
    d: int | None
