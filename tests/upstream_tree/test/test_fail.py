def test_upstream_broke_this():
    assert sum([1, 2]) == 4, "an upstream change broke the backend"
