"""`videocopies demo` (`make demo`) and `videocopies all-in-one --demo`: the seed's walk on the
in-memory adapters and five real copies (`walk`), then a user's order through the Bot API
simulator with every role a process of its own (`bot_story`).

Above the roles, not among them: a story drives a whole stack (it starts `all-in-one`'s),
while a role only wires one process.
"""
