"""``sdp protocols`` (also ``sdp run --list``): every runnable protocol, one line each, from the
registry (``protocols.workloads``), the protocol-specific plans (``parties.runtime.plans``) and
the own-data registry (``protocols.params.OWN_DATA``), so the list cannot drift from the code."""

from __future__ import annotations


def protocol_lines() -> list[str]:
    """One line per protocol: name, what it estimates, and the own-data schema kind it takes."""
    from parties.runtime.plans import PROTOCOL_PLANS
    from protocols.params import OWN_DATA
    from protocols.workloads import registered, summary

    names = sorted([*registered(), *PROTOCOL_PLANS])
    extra = {"txpub": "two-site transaction publisher, Paillier secure LM (spec 001)"}
    width = max(len(n) for n in names)
    out = []
    for n in names:
        line = f"{n:<{width}}  {extra.get(n) or summary(n)}"
        if n in OWN_DATA:
            line += f"  [own data: {OWN_DATA[n]}]"
        out.append(line)
    return out


def main(argv: list[str]) -> int:
    """Print the list (``--help`` says what it is)."""
    if any(a in ("-h", "--help") for a in argv):
        print("usage: sdp protocols\n\nlist every protocol sdp run knows, one line each")
        return 0
    if argv:
        print(f"sdp protocols: takes no arguments, got {' '.join(argv)}")
        return 2
    print("\n".join(protocol_lines()))
    print(
        "\n[own data: KIND]: runs on your file (sdp run NAME --data FILE --schema S.toml, "
        "docs/data.md); sdp run NAME --help lists its parameters"
    )
    return 0
