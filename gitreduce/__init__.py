"""gitreduce: bisect and reduce failing programs, caching every verdict in git."""

__version__ = "0.1.0"
