"""The party runtime: one process per party, mutual-TLS channels, sealed frames, canonical payloads,
hash-chained signed transcripts, per-phase cost ledgers, keys and cluster files, run plans."""
