"""The Terelius-Wikstrom proof of shuffle (docs/spec/05-mixnet.md V-16): ``statement`` (what
is proved, the ``ShuffleProof`` record), ``prover`` (``shuffle_and_prove``), ``verifier``
(``verify_shuffle``, ``verify_mix_chain``). Kept empty so importing the verifier does not load
the prover."""
