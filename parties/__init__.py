"""Everything that talks: the runtime (TLS channels, frames, transcript, ledger, keys, cluster
files), one sub-package per role that exchanges messages, the verifier, the launcher and the CLI.

Layer rule: imports ``protocols`` and ``mpc``; a role module is a message flow whose arithmetic
is a call into ``mpc`` or ``protocols``; ``verify`` imports no role.
"""
