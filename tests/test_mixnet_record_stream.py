"""The public record written in parts (``parties.mixnet.record_stream``) is byte for byte the
record encoded whole, from the same run; a server's submissions kept as their encoding decode
to the same list."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import cbor2
import numpy as np
import pytest

from mpc.mixnet.record_verifier import verify_record
from parties.mixnet import record_stream
from parties.mixnet.analyzer import receive_result
from parties.mixnet.client import run_clients
from parties.mixnet.record import public_record, record_fields
from parties.mixnet.record_stream import ARRAY, MAP, EncodedList, cbor_head, record_parts
from parties.mixnet.server import run_mix_server
from parties.mixnet.state import MixnetConfig, ServerState
from parties.runtime import codec
from parties.runtime.memlink import MemoryNetwork
from parties.runtime.signing import Signer
from parties.runtime.transcript import TranscriptWriter
from protocols.base import BatchSpec

SPECS = [BatchSpec("attr0", 1, 8), BatchSpec("attr1", 2, 5), BatchSpec("empty", 1, 3)]


@pytest.mark.parametrize("n", [0, 1, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1])
def test_cbor_head_is_the_canonical_header(n: int) -> None:
    # an unsigned integer's encoding carries the same shortest argument (major type 0)
    as_int = cbor2.dumps(n)
    for major in (ARRAY, MAP):
        assert cbor_head(major, n) == bytes([as_int[0] | major << 5]) + as_int[1:]


def test_cbor_head_refuses_what_has_no_header() -> None:
    for bad in (-1, 2**64):
        with pytest.raises(ValueError):
            cbor_head(ARRAY, bad)


def test_cbor_head_decodes_as_its_length() -> None:
    for n in (0, 5, 24, 300, 70000):
        assert cbor2.loads(cbor_head(ARRAY, n) + b"\x00" * n) == [0] * n


@pytest.fixture(scope="module")
def server_state() -> ServerState:
    """A finished server's state from a real in-process run (3 servers, t = 2)."""
    cfg = MixnetConfig("stream-run", ["mix1", "mix2", "mix3"], SPECS, mix_patience=8)
    rng = np.random.default_rng(3)
    batches = {
        "attr0": rng.integers(0, 8, (9, 1)),
        "attr1": rng.integers(0, 5, (9, 2)),
        "empty": np.zeros((0, 1), dtype=np.int64),
    }
    net = MemoryNetwork(cfg.servers + [cfg.clients, cfg.analyzer], timeout=30.0)

    async def main() -> list[object]:
        return await asyncio.gather(
            *(run_mix_server(net.context(s), cfg, i) for i, s in enumerate(cfg.servers, 1)),
            run_clients(net.context(cfg.clients), cfg, batches),
            receive_result(net.context(cfg.analyzer), cfg),
            return_exceptions=True,
        )

    res = asyncio.run(main())
    for r in res:
        assert not isinstance(r, BaseException), r
    state = res[0]
    assert isinstance(state, ServerState) and state.plaintexts and state.delegated is None
    return state


def test_streamed_record_is_the_whole_encoding(
    server_state: ServerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(server_state.submissions, EncodedList)  # compacted after screening
    whole = codec.dumps({**public_record(server_state), "round": 0})
    for chunk in (1, 2, 4096):  # item by item, in chunks that cut the lists, whole lists
        monkeypatch.setattr(record_stream, "CHUNK", chunk)
        parts = list(record_parts({**record_fields(server_state), "round": 0}))
        assert b"".join(parts) == whole
    assert len(parts) > 10  # written in parts, not one piece
    assert verify_record(codec.loads(whole)).ok


def test_submissions_as_encoding_decode_to_the_list(server_state: ServerState) -> None:
    enc = server_state.submissions
    assert isinstance(enc, EncodedList)
    subs = enc.items()
    assert len(subs) == len(enc) == 18 and all(isinstance(s, dict) for s in subs)
    assert EncodedList.of(subs) == enc
    assert enc.encoded() == codec.dumps(subs)
    assert EncodedList.of([]).items() == [] and EncodedList.of([]).encoded() == b"\x80"
    # the same record whether the state holds the submissions decoded or as their encoding
    decoded = ServerState(**{**server_state.__dict__, "submissions": subs})
    assert b"".join(record_parts(record_fields(decoded))) == b"".join(
        record_parts(record_fields(server_state))
    )


def test_key_order_and_fallbacks_match_cbor2() -> None:
    fields = {
        "zz": [1, 2, 3],
        "a": {"long-name": [[1], None], "b": []},
        "bb": {1: [2], 3: [4]},  # integer keys: encoded whole
        "ccc": EncodedList.of([{"x": b"\x01" * 32}] * 3),
        "e": {},
        "": [],
    }
    plain = {**fields, "ccc": fields["ccc"].items()}
    assert b"".join(record_parts(fields)) == codec.dumps(plain)
    with pytest.raises(TypeError):
        list(record_parts({1: 2}))  # type: ignore[dict-item]


def test_transcript_stores_a_payload_given_in_parts(tmp_path: Path) -> None:
    w = TranscriptWriter(tmp_path, "mix1", b"s" * 32, Signer(b"k" * 32))
    parts = [b"abc", b"", b"def" * 1000]
    digest, size = w.store_blob_parts(iter(parts))
    blob = b"".join(parts)
    assert digest == hashlib.sha256(blob).hexdigest() and size == len(blob)
    assert (w.blob_dir / digest).read_bytes() == blob
    assert [p.name for p in w.blob_dir.iterdir()] == [digest]  # no temporary file left

    def failing():
        yield b"x"
        raise RuntimeError("encoder failed")

    with pytest.raises(RuntimeError):
        w.store_blob_parts(failing())
    assert [p.name for p in w.blob_dir.iterdir()] == [digest]
