"""``sdp verify``: transcript chains and signatures, cross-party consistency, and per-protocol checks of
published runs (mix-net records, MPC runs, txpub runs). Imports no role: only ``mpc`` verification
code, ``protocols`` analyzers and the runtime's formats."""
