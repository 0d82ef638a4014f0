"""Real summation (x in [0, 1], estimate the sum) in the shuffle model, seed 004 section 6.3:
unbiased randomized rounding, then RSum_RR (Cheu et al.: unary bits + Boolean RR), RSum_KR (Balle
et al.: single k-RR message), RSum_RM (Balle, Bell, Gascon, Nissim: recursive multi-precision,
m = 2 or 3 messages), RSum_DSG (Split-Mix with distributed geometric noise); the LDP Harmony and
central Laplace baselines, and the ``sdp run`` workloads.
"""
