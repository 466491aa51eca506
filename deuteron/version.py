"""The package's version, in a module of its own so that every package can read it without
importing the top-level package (which imports the whole profiling API)."""

__version__ = "0.1.0"
