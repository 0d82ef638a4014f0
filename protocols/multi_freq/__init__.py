"""Multi-message frequency estimation of Ghazi, Golowich, Kumar, Pagh, Velingker, "On the Power of
Multiple Anonymous Messages" (EUROCRYPT 2021, arXiv 1908.11358), the survey's PRHR and PUCM:

- :mod:`.hadamard`: Sylvester-Hadamard codewords with bit operations (no d x d matrix);
- :mod:`.prhr`: the private-randomness Hadamard-response protocol (one tau-tuple of codeword
  coordinates per user plus rho uniform tuples) and its exact privacy accountant
  (:mod:`.prhr_privacy`);
- :mod:`.pucm`: the public-coin count-min protocol (tau public hash rows of s buckets, every
  bucket blanketed by Bernoulli(gamma) messages of every user);
- :mod:`.workload`: ``sdp run prhr | pucm``.

Where each parameter comes from is stated in each module and in docs/survey.md.
"""
