"""Run by the day benchmark's builds as an upstream test module: a breaking commit changes what test_mul expects."""


def test_add():
    assert 2 + 3 == 5


def test_mul():
    assert 2 * 3 == 6


def test_neg():
    assert -(2) == -2
