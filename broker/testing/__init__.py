"""Running brokers in tests and programs: in process (``embedded``), as real processes with etcd
(``harness``), fault injection in the request path (``faults``) and the pytest plugin
(``pytest_plugin``) that offers them as fixtures.
"""
