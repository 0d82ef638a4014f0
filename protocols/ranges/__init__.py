"""Range counting in the shuffle model (seed 004 section 6.4, Ghazi et al.'s reduction to
frequency estimation via the matrix mechanism): the hierarchical (tree) encoding, the matrix-
mechanism analyzer <w M^+, estimate> (generic dense form and a linear-time tree form), and the
range protocol over any frequency oracle underneath (k-RR or SLH per tree level).
"""
