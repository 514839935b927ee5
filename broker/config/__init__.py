"""Broker configuration: every setting declared once, loaded, validated, changed at run time, documented.

* ``declare``  — how a setting is declared (:class:`~broker.config.declare.Setting`: Kafka name, type,
  default, group, documentation, dynamic or not, per-broker only, validator, topic-config synonym);
* ``settings`` — the declarations (:class:`~broker.config.settings.BrokerConfig`, one field per setting)
  and every table derived from them (the dynamic sets, topic-config synonyms, Kafka's hour/minute spellings);
* ``loader``   — defaults < TOML file < ``KBROKER_*`` environment < flags, parsing and validation;
* ``dynamic``  — the dynamic broker configs applied at run time (Kafka's ``DynamicBrokerConfig``);
* ``docs``     — the README's settings tables, written from the declarations (``python -m broker.config.docs``).

The layer rule: this package sits at the bottom of the broker.  It imports only the standard library
and :mod:`protocol`, never another ``broker`` package, so every package may import it.  What needs the
packages above — the log's check of the topic-config defaults, the security settings' cross-checks, the
assignor names — is handed in as checks (:data:`broker.core.CONFIG_CHECKS`) by the composition root, and
what DescribeConfigs answers is assembled above it (:mod:`broker.admin.describe_configs`).  Components
get narrow settings objects built from the configuration by the composition root (:mod:`broker.core`).
"""
