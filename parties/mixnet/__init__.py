"""The verifiable mix-net's parties: the message flow around ``mpc.mixnet``'s arithmetic.

``plan`` (the run plan of ``--shuffler mixnet``), ``state`` (configuration and a server's
state), ``dkg`` (the DKG rounds), ``server`` (key announcement, screening, mixing),
``decrypt`` (the threshold-decryption exchange), ``client`` (encrypt and submit),
``analyzer`` (receive the shuffled plaintexts), ``record`` (the public record) and ``local``
(every party in one process over the in-memory network).
"""
