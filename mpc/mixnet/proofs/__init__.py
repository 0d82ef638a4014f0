"""The mix-net's proofs, prover and verifier of each together (issue 39, item 3).

- ``client_pok``: a client's proof of knowledge of its ciphertext randomness (V-14 rule 7).
- ``dkg_pok``: a DKG dealer's Schnorr proof of knowledge of its constant term (V-13 rule 2).
- ``dleq``: the Chaum-Pedersen DLEQ and the batched decryption-share proof (V-18).
- ``sigma``: their common ``{e, s}`` record (``SigmaProof``) and sigma-protocol arithmetic.
- ``shuffle/``: the Terelius-Wikstrom proof of shuffle (V-16): ``statement`` (the statement
  and the ``ShuffleProof`` record of S-1), ``prover``, ``verifier`` (the verifier imports the
  record, never the prover).

Each proof is a frozen dataclass whose fields are named as in docs/spec/ (``SigmaProof``:
``{e, s}``; ``ClientProof``: ``{t, s}``; ``ShuffleProof``: S-1's keys); ``wire()`` /
``from_wire()`` are its byte-identical encoding. Nothing here imports party code.
"""
