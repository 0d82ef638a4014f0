"""Seed 003: GFIM and LDPMiner, top-k frequent items on set-valued data (protocol, shuffle calibration, data, workload)."""
