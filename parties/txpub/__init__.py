"""The two-site transaction publisher's parties: sites A and B, their Paillier exchange, run plan."""
