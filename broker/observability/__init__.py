"""What the broker tells its operators: Prometheus metrics (``metrics``), log output
(``logging_setup``) and the loggers Kafka's admin APIs may change at run time (``loggers``).
"""
