"""One test per attack in docs/security.md: each failed on the code before issue 17 and passes after."""
