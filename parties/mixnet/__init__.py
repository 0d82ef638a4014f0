"""The verifiable mix-net's parties: DKG exchange, mixing servers, threshold-decryption exchange, run plan."""
