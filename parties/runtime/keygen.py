"""``sdp keygen NAME --dir PARTYDIR``: a host makes its own party key (per-host trust anchor).

Run on the party's own host. It writes ``PARTYDIR/NAME.key`` (mode 0600; it never leaves the
host) and ``PARTYDIR/certs/NAME.crt``, and prints the certificate's SHA-256 fingerprint. Send
only the certificate to the operator, who runs ``sdp cluster init ... --certs DIR`` with every
host's certificate and sends back ``NAME/`` (cluster file, certificates, ``trust.json``) to
merge into PARTYDIR; auditors compare the fingerprints in ``trust.json`` with the ones each
host printed (docs/deploy.md, "Keys made on each host").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from parties.runtime.keys import KeyError_, cert_path, fingerprint, keygen


def main(argv: list[str]) -> int:
    """Entry of ``sdp keygen``."""
    ap = argparse.ArgumentParser(prog="sdp keygen", description=__doc__.splitlines()[0])
    ap.add_argument("name", help="this party's name, as the cluster will list it (client-1 ...)")
    ap.add_argument("--dir", required=True, help="this host's party directory (created, 0700)")
    ap.add_argument(
        "--host",
        help="this host's address, written into the certificate (default: the party name)",
    )
    args = ap.parse_args(argv)
    keydir = Path(args.dir)
    try:
        pem = keygen(args.name, args.host or args.name, keydir)
    except (KeyError_, OSError) as exc:
        print(f"sdp keygen: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {keydir / (args.name + '.key')} (private: it stays on this host)")
    print(f"send the operator only {cert_path(keydir, args.name)}")
    print(f"certificate fingerprint (SHA-256) of {args.name}: {fingerprint(pem)}")
    return 0
