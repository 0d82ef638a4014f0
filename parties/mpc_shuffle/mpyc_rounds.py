"""Counting MPyC's communication rounds (``docs/costs.md``).

MPyC's mesh traffic does not pass through our transport, so its messages are not in the
transcripts and their causal chain is not in the run's critical path. A *flight* is a maximal
run of writes to one peer with no receipt from that peer in between: in a protocol where every
party sends in each round and waits for the others, every round is one flight on every link,
and each flight is one one-way hop that a link's delay adds to the wall time. The counter sits
between MPyC's protocol objects and their transports (writes) and between the transports and
the protocol objects (receipts); it forwards everything else.
"""

from __future__ import annotations

from typing import Any

from parties.runtime.netem import mpyc_peer_links


class FlightCounter:
    """Flights of one MPyC peer connection; wraps its transport and its protocol."""

    def __init__(self, transport: Any, protocol: Any) -> None:
        self._inner = transport
        self._protocol = protocol
        self.flights = 0
        self._heard = True  # the first write starts a flight

    # transport side (MPyC's protocol writes through us)
    def write(self, data: bytes) -> None:
        self._flight()
        self._inner.write(data)

    def writelines(self, items: Any) -> None:
        self._flight()
        self._inner.writelines(items)

    def _flight(self) -> None:
        if self._heard:
            self.flights += 1
            self._heard = False

    # protocol side (the transport delivers to us)
    def data_received(self, data: bytes) -> None:
        self._heard = True
        self._protocol.data_received(data)

    def __getattr__(self, name: str) -> Any:
        # protocol callbacks (connection_lost, eof_received, ...) go to the protocol; every
        # other attribute (is_closing, get_extra_info, ...) to the transport
        if name in ("connection_made", "connection_lost", "eof_received", "pause_writing",
                    "resume_writing"):  # fmt: skip
            return getattr(self._protocol, name)
        return getattr(self._inner, name)


def count_mpyc_flights(rt: Any) -> int:
    """Put a ``FlightCounter`` on every MPyC peer connection of ``rt`` (after any WAN
    emulation); returns how many were wrapped (0 for runtimes without transports)."""
    n = 0
    for _, proto, tr in mpyc_peer_links(rt):
        if isinstance(tr, FlightCounter):
            continue
        counter = FlightCounter(tr, proto)
        if hasattr(tr, "set_protocol"):
            tr.set_protocol(counter)
        proto.transport = counter
        n += 1
    return n


def mpyc_flights(rt: Any) -> int:
    """The most flights on any of this party's MPyC peer connections so far."""
    return max(
        (tr.flights for _, _, tr in mpyc_peer_links(rt) if isinstance(tr, FlightCounter)),
        default=0,
    )
