def test_arithmetic():
    assert 1 + 1 == 2


def test_strings():
    assert "relay".upper() == "RELAY"
