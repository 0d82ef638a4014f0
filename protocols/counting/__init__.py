"""Counting (each user holds a bit; estimate the number of ones) in the shuffle model, seed 004
section 6.1: Cnt_RR (Cheu et al. Boolean RR + amplification), Cnt_2M (Balcer-Cheu two-message
protocol with truncation at zero), Cnt_SGM (robust pure: distributed symmetric geometric noise over
Split-Mix shares), Cnt_BN (robust approximate: distributed binomial noise), the LDP and central
baselines, and the ``sdp run`` workloads.
"""
