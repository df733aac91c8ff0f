"""How a role's process lives, apart from what it serves: the garbage collector set for a
long-running role (`heap`), and starting roles as child processes of their own (`launch`),
which `videocopies all-in-one` runs its stack with, and tests and benchmarks run the real
roles with."""
