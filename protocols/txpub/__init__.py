"""Seed 001: two-site vertically partitioned transaction publisher (DP sampling, GS and LS).

The math, runnable without processes or keys: ``model`` (problem (5), theta, feasibility,
reference solver), ``data`` (FIMI loader, generator, ``load_dataset``), ``lm`` /
``global_solution`` / ``globalize`` (the GS solver against an oracle), ``site_state`` (one
site's local parts), ``plaintext`` (plaintext GS and the reference), ``local_solution`` (LS,
sampling, join) and ``metrics``. The secure cross-site products are an injected oracle: the two
sites and their Paillier exchange are ``parties.txpub``.
"""
