"""Pure differential privacy (delta = 0) in the shuffle model: exact certificates of the
shuffled view of multi-message protocols.

A shuffled protocol whose messages come from a finite set of types publishes, in effect, the
number of messages of each type. Its view is the n-fold convolution of the users' laws over count
vectors, so pure epsilon can be computed exactly at small n (``exact.pure_epsilon``), and a
necessary condition holds at every n (``exact.face_bound``): the event "no message of a type in
S" factorises over the users, so one user's ratio of that probability is a lower bound on the
protocol's epsilon whatever n is. The pure-DP protocols of Ghazi et al. (ITC 2020, arXiv
2002.01919) and Ghazi, Kumar, Manurangsi (arXiv 2305.17634) are not implemented here: only their
abstracts were reachable (docs/survey.md, "Pure DP").
"""
