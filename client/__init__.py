"""kbroker."""
