"""Counting distinct elements in the shuffle model (seed 004 section 6.4.1, after Balcer, Cheu,
Joseph & Mao, "Connecting Robust Shuffle Privacy and Pan-Privacy", SODA 2021): a robust
shuffle-private protocol with additive error Theta(sqrt(k)) in the domain size k
(:mod:`protocols.distinct.parity`), and its ``sdp run distinct`` workload.
"""
