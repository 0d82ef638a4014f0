"""Seed 000: multidimensional 1-way marginals (SRR-MS, ARR-SS, PSRR-SS), baselines, Calculate and workloads."""
