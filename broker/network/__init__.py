"""The network edge: listeners, connections and framing on asyncio.

``server`` accepts connections on every listener (TLS and SASL per listener through
:mod:`broker.security`), reads size-prefixed frames, answers requests in order per connection with
back-pressure limits, and sends fetched record data with ``sendfile``.  What a request means is
the request handlers' business (:mod:`broker.handlers`); the edge only hands them decoded frames.
"""
