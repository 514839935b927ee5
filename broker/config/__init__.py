"""Broker configuration: the settings (``settings``: declared once, loaded from defaults, a TOML
file, ``KBROKER_*`` and flags), the dynamic broker configs applied at run time (``dynamic``) and
what DescribeConfigs reports about them (``describe``).
"""
