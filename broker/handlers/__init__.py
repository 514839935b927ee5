"""Request handlers: one per Kafka API.

Each handler decodes its request, authorizes it (the separate authorization pass of
``authorization``) and calls the service that owns the state it touches — the replica manager,
a coordinator, the cluster metadata, the admin services — then builds the response.
"""
