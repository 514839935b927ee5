"""The transaction coordinator (KIP-98, KIP-890): transactional ids, producer epochs, the
two-phase commit through ``__transaction_state`` and the markers it sends to partition leaders.
"""
