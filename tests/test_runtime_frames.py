"""Frame codec: round trips, limits, and a fuzzed decoder that never crashes."""

from __future__ import annotations

import os

import pytest
from _helpers import data_header
from hypothesis import given, settings
from hypothesis import strategies as st

from parties.runtime.frames import PREFIX, VERSION, FrameDecoder, FrameError, frame_parts


def encode(h, body=b""):
    prefix, _ = frame_parts(h, body)
    return prefix + bytes(body)


def test_round_trip_split_anywhere():
    wire = encode(data_header(), b"abc") + encode(data_header(sq=2), b"xyz")
    for cut in range(len(wire) + 1):
        dec = FrameDecoder(1 << 20)
        frames = dec.feed(wire[:cut]) + dec.feed(wire[cut:])
        assert [f.body for f in frames] == [b"abc", b"xyz"]
        assert frames[1].header["sq"] == 2
        assert dec.buffered == 0


def test_truncated_frame_is_held_not_delivered():
    wire = encode(data_header(), b"abc")
    dec = FrameDecoder(1 << 20)
    assert dec.feed(wire[:-1]) == []
    assert dec.buffered == len(wire) - 1


def test_oversized_frame_rejected_before_reading_body():
    dec = FrameDecoder(1000)
    with pytest.raises(FrameError, match="oversized"):
        dec.feed(PREFIX.pack(5000, 10))


@pytest.mark.parametrize(
    "header,match",
    [
        ({"v": VERSION, "k": "x"}, "unknown frame kind"),
        (data_header(v=2), "version"),
        (data_header(sq="1"), "type"),
        (data_header(ci=3, nc=2), "out of range"),
        (data_header(dg=b"x"), "32 bytes"),
        ({**data_header(), "extra": 1}, "extra"),
    ],
)
def test_bad_headers_rejected(header, match):
    with pytest.raises(FrameError, match=match):
        FrameDecoder(1 << 20).feed(encode(header))


def test_non_cbor_header_rejected():
    hb = b"\xff\xfe\x00"
    with pytest.raises(FrameError, match="malformed"):
        FrameDecoder(1 << 20).feed(PREFIX.pack(2 + len(hb), len(hb)) + hb)


def _fuzz_one(data: bytes) -> None:
    dec = FrameDecoder(1 << 16)
    try:
        for f in dec.feed(data):
            assert f.kind in ("d", "s", "h")
    except FrameError:
        pass


@given(st.binary(max_size=512))
@settings(max_examples=300, deadline=None)
def test_fuzz_decoder_random_bytes(data):
    _fuzz_one(data)


@given(st.binary(max_size=200), st.integers(0, 400))
@settings(max_examples=300, deadline=None)
def test_fuzz_decoder_valid_prefix_random_header(junk, extra):
    _fuzz_one(PREFIX.pack(2 + len(junk) + extra, len(junk)) + junk + os.urandom(extra))


@pytest.mark.slow
@given(st.binary(max_size=2048))
@settings(max_examples=10_000, deadline=None)
def test_fuzz_decoder_10k_examples(data):
    _fuzz_one(data)


@pytest.mark.slow
@given(st.binary(max_size=300), st.integers(0, 600))
@settings(max_examples=10_000, deadline=None)
def test_fuzz_decoder_10k_structured(junk, extra):
    _fuzz_one(PREFIX.pack(2 + len(junk) + extra, len(junk)) + junk + b"\0" * extra)


@given(
    st.fixed_dictionaries(
        {
            "sq": st.integers(1, 2**63),
            "rd": st.integers(0, 2**31),
            "ph": st.text(max_size=20),
            "ty": st.text(max_size=20),
            "fr": st.text(max_size=10),
            "ln": st.integers(0, 2**40),
            "pb": st.booleans(),
            "dg": st.binary(min_size=32, max_size=32),
        }
    )
)
@settings(max_examples=200, deadline=None)
def test_header_encoding_is_canonical_cbor(fields):
    import cbor2

    from parties.runtime.frames import encode_header

    h = data_header(**fields)
    assert encode_header(h) == cbor2.dumps(h, canonical=True)
