"""Seed 002 reproduction: HP-SDP against its seven comparison methods (runs and report)."""
