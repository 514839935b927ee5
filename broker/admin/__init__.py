"""Admin services over the cluster metadata: topics (create, delete, partitions, configs),
configuration resources (brokers, topics, groups, loggers) and security metadata (SCRAM users,
ACLs).  Request handlers call them; each writes the metadata store by compare-and-set and waits
until its write is in this broker's image.
"""
