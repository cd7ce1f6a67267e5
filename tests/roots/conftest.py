# Test projects for sphinx.testing: built by the tests, never imported by pytest.
collect_ignore_glob = ["test-*"]
