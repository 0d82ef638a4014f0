"""The MPC secret-shared shuffler's parties: clients share, m servers permute-and-reshare, analyzer.

Modules: ``shuffler`` (client, server and analyzer roles of one shuffle), ``wire``
(configuration, client-side sharing, framing of share arrays), ``secure_ops`` (MPC building
blocks over a runtime: sharing, multiplication, opening, the domain check, the histogram mode),
``malicious`` (the malicious-abort checks: client sharings, MAC keys and tags, the MAC check
and the optional multiset check), ``reshare_exchange`` (coalition seeds and
permute-and-reshare rounds over MPyC), ``mpyc_runtime`` (MPyC's runtime, dead-peer
watchdog, TLS files), ``local_runtime`` (an in-process runtime for tests), ``selftest`` (one
MPyC server process of the multi-process self-test) and ``plan`` (the ``sdp run --shuffler
mpc`` run plan). The arithmetic they call is in ``mpc.shamir``, ``mpc.permute_reshare``,
``mpc.mac_check`` and ``mpc.histogram_arith``.
"""
