"""Share-partitions (KIP-932) on the partition leaders: their in-flight records (:mod:`.partition`),
the share sessions of ShareFetch (:mod:`.sessions`) and the manager serving ShareFetch and
ShareAcknowledge over them (:mod:`.manager`)."""
