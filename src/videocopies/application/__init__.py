"""The application layer: ports and one use case per command. Async, orchestration only."""
