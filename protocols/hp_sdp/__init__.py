"""Seed 002: HP-SDP histogram publication (SRR + shuffle + OLH + POP), its baselines, MURS, data and workload."""
