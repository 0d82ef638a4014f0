"""Seed 003 reproduction: GFIM against LDPMiner on set-valued data (runs and report)."""
