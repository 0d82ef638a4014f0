"""The verifiable mix-net's cryptography: pure functions, no I/O, no parties.

``schema`` holds the public artifacts and every Fiat-Shamir encoding (the only code the prover
and the verifier share); ``params`` the public run parameters and the session digest;
``submission`` the clients' encryption with proofs; ``mixing`` a server's mix step and the
check of other servers' steps; ``decryption`` the Lagrange-weighted decryption shares and their
combination; ``proofs/`` every proof, prover and verifier together (the shuffle proof in
``proofs/shuffle/``). The verifier half imports no prover code: ``proofs.shuffle.verifier``
(Terelius-Wikstrom proofs, one step or a batched chain), ``proof_checks`` (client proofs and screening,
decryption-share proofs, the DKG record) and ``record_verifier`` (a whole run's public record).
The message exchange that drives these functions is ``parties.mixnet``.
"""
