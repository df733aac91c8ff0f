"""videocopies: turn one short video into slightly different copies, paid in coins."""

__version__ = "0.1.0"
