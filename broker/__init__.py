"""kbroker's broker: a single-node Kafka-protocol broker and group coordinator on asyncio.

Run it with ``python -m broker`` or embed it::

    from broker import Broker, BrokerConfig, BrokerThread
"""

from broker.config import BrokerConfig
from broker.embedded import Broker, BrokerThread

__all__ = ["Broker", "BrokerConfig", "BrokerThread"]
