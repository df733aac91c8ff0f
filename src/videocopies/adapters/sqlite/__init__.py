"""Adapters over local SQLite files."""
