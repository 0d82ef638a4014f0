"""Shared pieces of the seed-004 protocol catalogue (counting, histograms, sums, ranges,
uniformity): the common protocol base (messages and bits per user, users certified from the
shuffled counts, releases re-accounted at the users received) and the survey's synthetic data.
"""
