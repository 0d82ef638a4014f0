"""Known-answer vectors of every Fiat-Shamir encoding and hash-to-group of the mix-net.

``tests/vectors/mixnet_fs.json`` fixes the outputs of ``mpc.mixnet.schema`` (and the two
hash-to-group functions and the message embedding it relies on) on fixed inputs, so that an
independent verifier written from ``docs/mixnet.md`` can check its encodings, and so that no
change to an encoding goes unnoticed. Regenerate (only for a deliberate, versioned change of an
encoding) with ``python tests/test_mixnet_vectors.py --write``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpc import ristretto as R  # noqa: E402
from mpc.elgamal import embed  # noqa: E402
from mpc.mixnet import schema as S  # noqa: E402

VECTORS = Path(__file__).parent / "vectors" / "mixnet_fs.json"


def _pt(i: int) -> bytes:
    """A fixed group element: ``(i + 1) G``."""
    return R.smul_base(i + 1)


def compute() -> dict[str, Any]:
    """Every vector: inputs (hex for bytes) and the expected output (hex)."""
    sess = bytes(range(64))
    a = [[_pt(0), _pt(1), _pt(2)]]
    b = [[_pt(3), _pt(4), _pt(5)]]
    ct = S.Ciphertexts(a, b)
    out = S.Ciphertexts([[_pt(6), _pt(7), _pt(8)]], [[_pt(9), _pt(10), _pt(11)]])
    params = {"k": 3, "t": 2, "servers": ["m1", "m2", "m3"], "batches": []}
    params["batches"] = [{"name": "b", "width": 1, "bound": 8, "components": 1}]
    c = [_pt(12), _pt(13), _pt(14)]
    h = lambda x: x.hex()  # noqa: E731
    sc = lambda x: R.scalar_bytes(x).hex()  # noqa: E731  scalars: 32-byte little-endian
    useed = S.perm_challenge_seed(sess, 2, "b", ct, out, c)
    v: dict[str, Any] = {
        "fs_hash": {
            "label": "test",
            "parts": ["bytes 00ff", "str 'batch-é'", "int -1", "bool true", "int 258"],
            "out": h(S.fs_hash("test", b"\x00\xff", "batch-é", -1, True, 258)),
        },
        "fs_scalar": {
            "label": "test",
            "parts": ["bytes 01"],
            "out": sc(S.fs_scalar("test", b"\x01")),
        },
        "scalar_vector": {
            "seed": h(b"seed"),
            "n": 3,
            "out": [sc(x) for x in S.scalar_vector(b"seed", 3)],
        },
        "ciphertexts_digest": {
            "a": [h(x) for x in a[0]],
            "b": [h(x) for x in b[0]],
            "out": h(ct.digest()),
        },
        "session_digest": {
            "session_id": "sid",
            "params": params,
            "pk": h(_pt(20)),
            "dkg_digest": h(b"\x01" * 64),
            "out": h(S.session_digest("sid", params, _pt(20), b"\x01" * 64)),
        },
        "shuffle_generators": {
            "sess": h(sess),
            "batch": "b",
            "n": 3,
            "out": [h(S.shuffle_generators(sess, "b", 3)[0])]
            + [h(x) for x in S.shuffle_generators(sess, "b", 3)[1]],
        },
        "perm_challenge_seed": {
            "sess": h(sess),
            "step": 2,
            "batch": "b",
            "input": "ciphertexts_digest inputs",
            "output_a": [h(x) for x in out.a[0]],
            "output_b": [h(x) for x in out.b[0]],
            "c": [h(x) for x in c],
            "out": h(useed),
        },
        "shuffle_challenge": {
            "useed": h(useed),
            "chat": [h(_pt(30 + i)) for i in range(3)],
            "that": [h(_pt(40 + i)) for i in range(3)],
            "t1": h(_pt(50)),
            "t2": h(_pt(51)),
            "t3": h(_pt(52)),
            "t4a": [h(_pt(53))],
            "t4b": [h(_pt(54))],
            "out": sc(
                S.shuffle_challenge(
                    useed,
                    [_pt(30 + i) for i in range(3)],
                    [_pt(40 + i) for i in range(3)],
                    _pt(50),
                    _pt(51),
                    _pt(52),
                    [_pt(53)],
                    [_pt(54)],
                )
            ),
        },
        "client_challenge": {
            "sess": h(sess),
            "client": "client-1/u7",
            "batch": "b",
            "index": 1,
            "a": [h(_pt(60))],
            "b": [h(_pt(61))],
            "t": [h(_pt(62))],
            "out": sc(
                S.client_challenge(sess, "client-1/u7", "b", 1, [_pt(60)], [_pt(61)], [_pt(62)])
            ),
        },
        "dec_share_seed": {
            "sess": h(sess),
            "server": 2,
            "batch": "b",
            "dset": [1, 2],
            "bs": [[h(x) for x in b[0]]],
            "ds": [[h(x) for x in a[0]]],
            "out": h(S.dec_share_seed(sess, 2, "b", [1, 2], b, a)),
        },
        "dleq_challenge": {
            "label": "dec",
            "ctx": h(b"ctx"),
            "g1": h(R.G),
            "y1": h(_pt(70)),
            "g2": h(_pt(71)),
            "y2": h(_pt(72)),
            "t1": h(_pt(73)),
            "t2": h(_pt(74)),
            "out": sc(
                S.dleq_challenge("dec", b"ctx", R.G, _pt(70), _pt(71), _pt(72), _pt(73), _pt(74))
            ),
        },
        "dkg_pok_challenge": {
            "session_id": "sid",
            "server": 3,
            "c0": h(_pt(80)),
            "t": h(_pt(81)),
            "out": sc(S.dkg_pok_challenge("sid", 3, _pt(80), _pt(81))),
        },
        "dkg_digest": {
            "commitments": {"1": [h(_pt(90)), h(_pt(91))], "3": [h(_pt(92)), h(_pt(93))]},
            "out": h(S.dkg_digest({1: [_pt(90), _pt(91)], 3: [_pt(92), _pt(93)]})),
        },
        "hash_to_point": {
            "parts": [h(b"a"), h(b"bc")],
            "out": h(R.hash_to_point(b"a", b"bc")),
        },
        "generators": {"domain": h(b"dom"), "n": 2, "out": [h(x) for x in R.generators(b"dom", 2)]},
        "embed": {"payload": h(b"\x05"), "out": h(embed(b"\x05"))},
    }
    return v


def test_known_answer_vectors() -> None:
    want = json.loads(VECTORS.read_text())
    got = json.loads(json.dumps(compute()))
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name


def test_dec_share_seed_is_length_prefixed() -> None:
    """Moving a byte between the batch name and the set changes the seed (the old
    concatenation of sess, server, batch and set was ambiguous)."""
    sess, b, d = b"s" * 64, [[_pt(1)]], [[_pt(2)]]
    assert S.dec_share_seed(sess, 1, "b", [1, 2], b, d) != S.dec_share_seed(
        sess, 1, "b|", [1, 2], b, d
    )
    assert S.dec_share_seed(sess, 1, "b", [1, 2], b, d) == S.fs_hash(
        "dec-rlc",
        sess,
        1,
        "b",
        (1).to_bytes(8, "little") + (2).to_bytes(8, "little"),
        1,
        _pt(1),
        _pt(2),
    )


if __name__ == "__main__":
    if "--write" not in sys.argv:
        raise SystemExit("usage: python tests/test_mixnet_vectors.py --write")
    VECTORS.write_text(json.dumps(compute(), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {VECTORS}")
