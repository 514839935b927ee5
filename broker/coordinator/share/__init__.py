"""The share coordinator (KIP-932): share-partitions' durable state in ``__share_group_state``
(:mod:`.state`, :mod:`.coordinator`), its service over the coordinator runtime (:mod:`.service`) and
the client brokers reach it with (:mod:`.persister`)."""
