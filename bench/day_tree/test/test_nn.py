"""Run by the day benchmark's builds as an upstream test module: a breaking commit changes what test_relu expects."""


def relu(x):
    return max(0, x)


def test_relu():
    assert relu(-1) == 0


def test_linear():
    assert 2 * 3 + 1 == 7
