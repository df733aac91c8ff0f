"""How a role's process lives, apart from its wiring (roles/) and what it serves (adapters/):
what one core starts and stops (`core_process`) and its loops (`core_loops`); an edge's parts
(`edge_node`); a worker's rounds (`worker_loop`); background loops and the server that stops
cleanly (`lifecycle`); the garbage collector set for a long-running role (`heap`); the
procedures of `deploy core` (`blue_green`) and `copies make` (`local_copies`); and starting roles
as child processes of their own (`launch`, `keeper`, `data_dir`), which `videocopies all-in-one`
runs its stack with, and tests and benchmarks run the real roles with. Nothing here imports a
role: a container reaches it as an argument."""
