"""Composition roots: each role builds only what it runs."""
