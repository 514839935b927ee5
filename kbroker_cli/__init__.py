"""``kbroker``: the admin command line — a client application of the broker, built on our client library.

Topics, produce/consume, groups and cluster inspection against any Kafka-protocol
broker; see :mod:`kbroker_cli.main` for the commands.
"""
