"""Cryptography and nothing else: ristretto255 group, ElGamal, Schnorr/Chaum-Pedersen proofs, the
Terelius-Wikstrom proof of shuffle, DKG arithmetic, Paillier, Shamir sharing, permute-and-reshare
arithmetic, fixed point. Pure functions of numbers and bytes: no network, no DP, no imports of
``protocols`` or ``parties``.
"""
