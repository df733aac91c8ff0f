"""HTTP adapters: the FastAPI app core serves (jobs, edge, control) and the client nodes reach it with."""
