"""Integration tests against real servers started on loopback."""
