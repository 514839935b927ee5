"""Partitions and their replicas on this broker (Kafka's ReplicaManager / Partition split).

``replica_manager`` hosts the partitions the metadata image assigns here, as leader or follower:
appends, reads, the high watermark, the ISR, controlled shutdown.  ``partition`` is one partition's
replication state (sans-IO).  ``fetcher`` keeps followers in step with their leaders.
``purgatory`` holds requests that wait (long-poll fetches, acks=all produces, coordinator writes)
on a timing wheel.
"""
