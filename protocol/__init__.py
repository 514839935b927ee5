"""The Kafka wire protocol: frames, headers, every message we serve, record batches, error codes.

Pure: bytes in, objects out, no I/O.  The broker and the client both speak
through this package, so there is exactly one codec layer.
"""

from protocol import compiled as _compiled

_compiled.install()  # before any of the compiled modules can be imported (protocol/compiled.py)
