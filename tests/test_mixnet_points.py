"""``mpc.mixnet.points.Points``: a blob of 32-byte elements that reads like their list."""

from __future__ import annotations

import pickle

import pytest

from mpc.mixnet.points import Points, joined
from mpc.mixnet.schema import Ciphertexts, blob_points

ELEMS = [bytes([i]) * 32 for i in range(7)]


def test_points_reads_like_the_list() -> None:
    p = Points(b"".join(ELEMS))
    assert len(p) == 7 and list(p) == ELEMS and p == ELEMS and ELEMS == p
    assert p[0] == ELEMS[0] and p[-1] == ELEMS[-1] and p[3] == ELEMS[3]
    assert p[2:5] == ELEMS[2:5] and isinstance(p[2:5], Points)
    assert p[5:2] == [] and p[::2] == ELEMS[::2] and p[-3:] == ELEMS[-3:]
    assert p.index(ELEMS[4]) == 4 and ELEMS[6] in p and p.count(ELEMS[1]) == 1
    assert joined(p) == b"".join(ELEMS) == joined(ELEMS)
    assert pickle.loads(pickle.dumps(p)) == p
    assert p != ELEMS[:6] and p != ELEMS[::-1] and p != [b"x"] * 7
    with pytest.raises(IndexError):
        p[7]
    with pytest.raises(IndexError):
        p[-8]
    with pytest.raises(ValueError):
        Points(b"x" * 33)


def test_ciphertexts_of_points_equal_those_of_lists() -> None:
    blob = b"".join(ELEMS)
    parsed = Ciphertexts.from_obj({"w": 1, "n": 7, "a": [blob], "b": [blob]})
    listed = Ciphertexts([list(ELEMS)], [list(ELEMS)])
    assert isinstance(parsed.a[0], Points)
    assert parsed == listed and parsed.to_obj() == listed.to_obj()
    assert parsed.digest() == listed.digest()
    assert parsed.row(2) == listed.row(2) and parsed.take([3, 1]) == listed.take([3, 1])
    with pytest.raises(ValueError):
        blob_points(blob, 6, "x")
