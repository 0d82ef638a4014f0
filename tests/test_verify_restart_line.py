"""``sdp verify`` says a party rejoined only where a peer's signed ``rejoin`` entry records it
(issue 43 item 4: a restart that reached no peer was reported as "restarted and rejoined")."""

from __future__ import annotations

from parties.verify.incarnations import restart_line
from parties.verify.transcripts import Transcript


def _t(party: str, entries: list[dict], inc: int = 0, crashed: list | None = None) -> Transcript:
    return Transcript(party, entries, incarnation=inc, crashed=crashed or [], label=party)


def test_a_rejoin_is_reported_only_with_a_peers_signed_rejoin_entry():
    crashed = _t("client-3", [{"dir": "open", "i": 0}], 0)
    crashed.label = "client-3.crashed-0"
    current = _t("client-3", [{"dir": "open", "i": 0}], 1, [crashed])
    quiet_peer = _t("shuffler", [{"dir": "recv", "peer": "client-1", "i": 1}])
    line = restart_line(current, {"client-3": current, "shuffler": quiet_peer})
    assert "never rejoined the run" in line and "rejoined as" not in line, line
    # another incarnation's rejoin does not count
    other = _t("shuffler", [{"dir": "rejoin", "peer": "client-3", "inc": 2, "i": 1}])
    assert "never rejoined" in restart_line(current, {"client-3": current, "shuffler": other})
    peer = _t("shuffler", [{"dir": "rejoin", "peer": "client-3", "inc": 1, "i": 1}])
    line = restart_line(current, {"client-3": current, "shuffler": peer})
    assert "rejoined as incarnation 1 (rejoin recorded by shuffler)" in line, line
    assert "crashed incarnations verified: client-3.crashed-0.jsonl" in line
