import pytest


@pytest.mark.parametrize("a,b,total", [(1, 2, 3), (2, 2, 4), (-1, 1, 0)])
def test_add(a, b, total):
    assert a + b == total


def test_view_shares_storage():
    data = bytearray(b"abcd")
    view = memoryview(data)[1:3]
    data[1] = ord("X")
    assert bytes(view) == b"Xc"
