"""Uniformity testing in the shuffle model (seed 004 section 6.4.3, after Balcer, Cheu, Joseph &
Mao, SODA 2021): PUT (robust pure: Cnt_SGM on every bin of the one-hot encoding) and AUT (robust
approximate: Cnt_BN on every bin), a noise-corrected collision statistic with a public threshold,
and the sample complexity at which a tester reaches a stated power.
"""
