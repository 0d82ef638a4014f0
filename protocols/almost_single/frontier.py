"""What the almost-single-message frontier protocols share (FE1 and HHD, whose levels are FE1
rounds): a target ``(eps_c, delta)``, a blanket share ``gamma`` and a record of public
parameters ``p`` (with its ``n`` users and ``B`` items), given at construction or explicitly."""

from __future__ import annotations

from typing import Any, TypeVar

from protocols.catalogue.common import CatalogueProtocol

_Frontier = TypeVar("_Frontier", bound="FrontierProtocol")


class FrontierProtocol(CatalogueProtocol):
    """Base of FE1 and HHD: :meth:`set_parameters` stores the target and the parameter record."""

    p: Any  # the protocol's public parameters (FE1Parameters, HHDParameters)
    B: int

    def set_parameters(self, params: Any, eps_c: float, delta: float, gamma: float) -> None:
        """Store the target (eps_c, delta), gamma and the parameter record (with n and B)."""
        self.eps_c, self.delta, self.gamma = float(eps_c), float(delta), float(gamma)
        self.p, self.n, self.B = params, params.n, params.B

    @classmethod
    def from_parameters(
        cls: type[_Frontier], params: Any, eps_c: float, delta: float, gamma: float = 1.0
    ) -> _Frontier:
        """The protocol with explicit public parameters (tiny instances for exact
        enumeration)."""
        self = cls.__new__(cls)
        self.set_parameters(params, eps_c, delta, gamma)
        return self
