"""Adapters: the ports implemented with real technology, and in-memory fakes for tests."""
