"""Seed 001: two-site vertically partitioned transaction publisher (DP sampling, GS and LS)."""
