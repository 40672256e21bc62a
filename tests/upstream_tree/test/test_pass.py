def test_one_plus_one():
    assert 1 + 1 == 2


def test_join():
    assert "-".join(["a", "b"]) == "a-b"
