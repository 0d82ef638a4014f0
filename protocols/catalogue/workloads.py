"""Registers every seed-004 workload with ``sdp run`` (the single entry of WORKLOAD_MODULES)."""

from __future__ import annotations

import protocols.counting.workload  # noqa: F401  cnt_rr, cnt_2m, cnt_sgm, cnt_bn
import protocols.histograms.workload  # noqa: F401  hist_kr, hist_mm, slh, murs
import protocols.ranges.workload  # noqa: F401  range
import protocols.sums.workload  # noqa: F401  rsum_rr, rsum_kr, rsum_rm, rsum_dsg
import protocols.uniformity.workload  # noqa: F401  put, aut
