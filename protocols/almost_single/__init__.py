"""Frequency estimation with almost a single message (Luo, Wang & Yi, "Frequency Estimation in
the Shuffle Model with Almost a Single Message", CCS 2022, arXiv 2111.06833): every user sends its
hashed value plus, in expectation, rho = o(1) uniform blanket messages
(:mod:`protocols.almost_single.lwy`), the exact privacy accountant of the blanket
(:mod:`protocols.almost_single.blanket`) and the ``sdp run hist_lwy`` workload.
"""
