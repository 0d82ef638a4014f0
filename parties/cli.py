"""The ``sdp`` command: dispatches each sub-command to the module that owns it.

Every command module exposes ``main(argv: list[str]) -> int`` and builds its own argparse
parser, so a command's imports (crypto, MPyC, matplotlib) are paid only when it runs.
"""

from __future__ import annotations

import importlib
import os
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("parties.launcher", "run a protocol: every party its own local process"),
    "protocols": ("parties.protocol_list", "list every protocol, one line each"),
    "party": ("parties.runtime.party", "start one party of a cluster (separate-host runs)"),
    "cluster": ("parties.runtime.cluster_init", "write one directory per party for separate hosts"),
    "keygen": ("parties.runtime.keygen", "make this host's own party key (per-host trust anchor)"),
    "verify": ("parties.verify.run", "check a run's transcripts, signatures and proofs"),
    "costs": ("parties.costs", "print the per-party, per-phase cost ledger"),
    "account": ("protocols.accountant.cli", "privacy-amplification accountant"),
    "data": ("protocols.datasets.cli", "propose or check a public data schema"),
    "reproduce": ("parties.reproduce.reproduce", "reproduce a source paper's experiments"),
}


def _usage() -> str:
    lines = ["usage: sdp COMMAND [options]", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "sdp COMMAND --help shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sdp`` console script."""
    try:
        return _main(argv)
    except BrokenPipeError:  # output piped into head & co.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"sdp: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    try:
        return int(module.main(rest) or 0)
    except KeyboardInterrupt:
        print("sdp: interrupted", file=sys.stderr)
        return 130
    except SystemExit:
        raise
    except Exception as exc:  # a bug: one clear line, the traceback in a file
        import tempfile
        import traceback

        fd, path = tempfile.mkstemp(prefix=f"sdp-{name}-", suffix=".traceback")
        with os.fdopen(fd, "w") as f:
            f.write(traceback.format_exc())
        print(
            f"sdp {name}: internal error {type(exc).__name__}: {exc} (traceback in {path})",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
