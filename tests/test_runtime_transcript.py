"""The transcript writer's fast path produces exactly the canonical entries of the schema."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from parties.runtime.signing import Signer
from parties.runtime.transcript import TranscriptWriter, canonical_json


@given(
    st.sampled_from(["send", "recv"]),
    st.text(min_size=1, max_size=12),
    st.text(max_size=20),
    st.integers(0, 2**40),
    st.text(max_size=20),
    st.integers(1, 2**50),
    st.integers(0, 2**50),
    st.binary(min_size=32, max_size=32),
    st.booleans(),
)
@settings(max_examples=150, deadline=None)
def test_fast_path_equals_canonical_json(tmp_path_factory, d, peer, ph, rd, ty, msg, ln, dg, pub):
    run = tmp_path_factory.mktemp("t")
    w = TranscriptWriter(run, "party-1", b"s" * 16, Signer(b"k" * 32))
    w.append_message(d, peer, ph, rd, ty, msg, ln, dg.hex(), pub)
    w.close()
    entries = [
        json.loads(x) for x in (run / "transcripts" / "party-1.jsonl").read_text().splitlines()
    ]
    e = entries[2]
    assert e["peer"] == peer and e["ph"] == ph and e["ty"] == ty and e["pub"] is pub
    body = {k: v for k, v in e.items() if k != "hash"}
    assert hashlib.sha256(canonical_json(body)).hexdigest() == e["hash"]
    assert entries[3]["prev"] == e["hash"]
