"""Seed 001 reproduction: the two-site transaction publisher's figures and tables."""
