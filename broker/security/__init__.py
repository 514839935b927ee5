"""Security cores: pure, sans-IO building blocks the network edge and request handlers use.

| module | owns |
|---|---|
| ``listeners`` | parsing ``listeners`` / ``advertised.listeners`` / ``listener.security.protocol.map`` |
| ``tls`` | ``ssl.SSLContext`` for server listeners and clients; the principal of a peer certificate |
| ``scram`` | SCRAM credentials, their persisted records, the credential store (KIP-554 rules), the users file |
| ``sasl`` | the per-connection SASL server state machine (SaslHandshake / SaslAuthenticate, PLAIN, SCRAM) |
| ``acl`` | Kafka's ACL model, the authorizer, ACL filters and records, and the per-API authorization table |

Nothing here opens sockets or files except the explicit loaders (``tls`` contexts read PEM files,
``scram.load_users_file`` reads the users file).
"""
