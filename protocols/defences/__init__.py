"""Shuffler-side defences the survey asks for (seed 004 sections 1.2 and 8), as pure functions
for the shuffler roles to call: a minimum batch size enforced through a noisy (DP) threshold on
the batch volume, and per-shuffler uniform fake messages (MURS-style), each with its effect on the
accounted epsilon.
"""
