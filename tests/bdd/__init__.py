"""Product-owner features (features/), run against the in-memory service."""
