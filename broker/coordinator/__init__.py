"""Coordinators: the group coordinator (classic and KIP-848 groups, committed offsets) and the
transaction coordinator, each a sans-IO state machine per ``__consumer_offsets`` /
``__transaction_state`` partition, driven by one runtime.

``runtime`` hosts a shard per partition this broker leads: it loads the shard from the log (only
what is committed), runs requests through it, appends the records a request yields and answers
once they are replicated.  ``group`` and ``txn`` hold the state machines and the services the
request handlers call; each applies its records through one ``replay``, on load and when the write
that carries them commits.
"""
