"""What a run publishes and the guarantee that covers it: the privacy ledger and gate (``ledger``),
run-level privacy parameters and re-accounting helpers (``statements``), the public assignment of
users to groups that fixes every group's size before any data is read (``grouping``)."""
