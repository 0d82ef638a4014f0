"""Histograms (frequency estimation over [d]) in the shuffle model, seed 004 section 6.2:
Hist_KR (k-RR + Theorem 4), Hist_MM (one-hot + the Cnt_2M randomizer per label), SLH (OLH with
the shuffle-optimal hash range), MURS (SLH + uniform fake reports at 1% of n), the LDP k-RR and
central Laplace baselines, and the ``sdp run`` workloads.
"""
