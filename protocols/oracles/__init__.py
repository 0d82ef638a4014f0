"""Frequency oracles and their helpers: GRR, OLH, unary encodings, Hadamard response, padding-and-sampling, central baselines, post-processing, the privacy audit."""
