"""The two-site transaction publisher's parties (seed 001): sites A and B and their exchanges.

Modules: ``plan`` (the ``sdp run txpub`` run plan), ``entry`` (one site's entry point and
parameters), ``gs_sites`` (the GS sites A and B and the in-process two-site driver),
``secure_oracle`` (A's solver oracle: B's parts by request, Paillier cross Grams),
``paillier_exchange`` (the messages of the sum-of-scalar-products protocols) and ``publish``
(sampling, publication and the LS sites). The solvers, model and sampler are in
``protocols.txpub``; the Paillier arithmetic is in ``mpc.paillier`` and ``mpc.scalar_product``.
"""
