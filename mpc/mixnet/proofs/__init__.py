"""The mix-net's proofs, one file each with its prover and its verifier (issue 39, item 3).

- ``client_pok``: a client's proof of knowledge of its ciphertext randomness (V-14 rule 7).
- ``dkg_pok``: a DKG dealer's Schnorr proof of knowledge of its constant term (V-13 rule 2).
- ``dleq``: the Chaum-Pedersen DLEQ and the batched decryption-share proof (V-18).
- ``sigma``: their common ``{e, s}`` record (``SigmaProof``).

Still split by role (to move here next): the shuffle proof (``mpc.shuffle_proof`` /
``mpc.mixnet.shuffle_verifier``, V-16). Each proof is a frozen dataclass whose fields are named
as in docs/spec/ (``SigmaProof``: ``{e, s}``; ``ClientProof``: ``{t, s}``); ``wire()`` / ``from_wire()`` are its byte-identical encoding.
Nothing here imports party code; the verifiers import these files for the checking half.
"""
