"""The web console every broker serves (``console.listener``): the cluster, topics and their records,
consumer groups and their lag, brokers, users and ACLs, in a browser.

The top of the broker's layers beside the network edge: it reads only what the composition root
hands it (:class:`~broker.console.sources.ConsoleSources`: the metadata image, a way to make Kafka
requests as the logged-in principal — the same handlers, authorization pass and admin services a
Kafka client's requests go through, on this broker or on the one that owns what they name — the
sizes and offsets of the logs hosted here, the metrics history, and the credential check for the
login).  It runs in the broker's event loop (aiohttp, every handler async; password checks and record
reads off the loop) and renders pages on the server (Jinja2 templates, autoescaped); the page
script (``static/console.js``, shipped in the package) refreshes the live parts of a page.

* :mod:`broker.console.sources` — what the console is given, and its settings
* :mod:`broker.console.sessions` — logins, CSRF tokens, session expiry (sans-IO)
* :mod:`broker.console.data` — the facts each page shows, gathered through Kafka requests
* :mod:`broker.console.views` — formatting: sizes, rates, record bodies, charts, pages of rows
* :mod:`broker.console.web` — the HTTP routes, forms and actions (:class:`Console`)
"""

from broker.console.sources import ConsoleSettings, ConsoleSources, LocalPartition
from broker.console.web import Console

__all__ = ["Console", "ConsoleSettings", "ConsoleSources", "LocalPartition"]
