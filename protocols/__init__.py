"""Statistics and privacy: randomizers, estimators, the accountant, each paper's algorithm and workload.

Layer rule: imports ``mpc`` for arithmetic, never ``parties``; everything here runs in a notebook
without a process or a key. ``base`` is the shuffler-facing interface (encoder, analyzer, batch
layout), ``workloads`` the registry ``sdp run NAME`` looks names up in, ``rng`` the seeding scheme;
every paper or family has its own sub-package.
"""
