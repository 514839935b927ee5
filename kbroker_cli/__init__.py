"""``kbroker``: the admin command line — a client application of the broker, built on our client library.

Topics, produce/consume, groups and cluster inspection against any Kafka-protocol broker.

* :mod:`kbroker_cli.main` — the entry point (``kbroker``, ``python -m kbroker_cli``): builds the
  parser from the command groups, runs the chosen command, maps failures to exit codes.
* :mod:`kbroker_cli.commands` — one module per command group (``topics``, ``cluster``, ``groups``,
  ``share-groups``, ``configs``, ``transactions``, ``produce``, ``consume``, ``acls``, ``users``), each declaring its
  commands with their arguments next to their handlers.
* :mod:`kbroker_cli.command` — how a command is declared (:class:`~kbroker_cli.command.CommandGroup`,
  :func:`~kbroker_cli.command.arg`) and the CLI's argument parser.
* :mod:`kbroker_cli.common` — what the commands share: global options and the connection
  (``--bootstrap-servers`` / ``KBROKER_BOOTSTRAP``, security settings), errors, output helpers.
"""
