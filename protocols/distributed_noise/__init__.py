"""Distributed noise for shuffle protocols: noise that users add in pieces, with exact accounting.

``binomial``: a count plus binomial noise (each user contributes Bernoulli noise messages); exact
hockey-stick delta(eps), the Balcer-Cheu binomial-smoothness lemma, calibration. ``polya``: the
symmetric geometric (discrete Laplace) noise split into Polya differences (survey Theorem 8),
its pure epsilon when fewer users than planned contribute, tail bounds. ``robust_splitmix``: an
integer (or integer-vector) sum over Split-Mix shares with Polya noise calibrated for a fraction
gamma of honest users (robust shuffle privacy), re-accounted at the users received.
"""
