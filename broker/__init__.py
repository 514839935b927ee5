"""kbroker's broker: a Kafka-protocol broker and group coordinator on asyncio, alone or in a cluster on etcd.

Run it with ``python -m broker`` or embed it::

    from broker import Broker, BrokerConfig, BrokerThread
"""

import protocol  # noqa: F401  (first: it installs the import hook of the compiled modules, protocol/compiled.py)
from broker.config.settings import BrokerConfig
from broker.testing.embedded import Broker, BrokerThread

__all__ = ["Broker", "BrokerConfig", "BrokerThread"]
