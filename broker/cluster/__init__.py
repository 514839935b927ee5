"""Cluster metadata: the metadata store (etcd, or a local one for a single broker), the image
every broker keeps of it, the records it holds, the controller's decisions and the service that
links a broker to the cluster (registration, leases, watches, compare-and-set writes).
"""
