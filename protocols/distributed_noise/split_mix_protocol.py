"""What every robust Split-Mix catalogue protocol shares (Cnt_SGM, RSum_DSG): s shares per user
in one batch ``shares`` mod q, and the guarantee of the noise actually contributed."""

from __future__ import annotations

import math

from protocols.base import BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.distributed_noise.robust_splitmix import RobustSplitMixParams, guarantee_at


class RobustSplitMixProtocol(CatalogueProtocol):
    """Base of the protocols whose users send Split-Mix shares of (value + Polya noise)."""

    params: RobustSplitMixParams

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("shares", 1, self.params.modulus)]

    def messages_per_user(self) -> float:
        return float(self.params.shares)

    def bits_per_user(self) -> float:
        return float(self.params.shares * math.ceil(math.log2(self.params.modulus)))

    def max_messages(self) -> dict[str, int]:
        return {"shares": self.params.shares}

    def guarantee(self, users: int) -> Guarantee:
        eps, delta, note = guarantee_at(self.params, users)
        return Guarantee(eps, delta, "survey-thm8+thm9 (robust split-mix)", "upper", note)
