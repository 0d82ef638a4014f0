"""Seed 000, Sec. 8: k-way marginals (Calm, Fourier), Calm over the shuffle, synthetic data and SGD models."""
