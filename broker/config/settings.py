"""The broker's settings, each declared once: :class:`BrokerConfig` and the tables derived from it.

Every field of :class:`BrokerConfig` is a setting, declared with :func:`~broker.config.declare.setting`:
its Kafka name (the field's name with dots), type, default, group, documentation, whether it is
dynamic, its validator, and the topic config it gives the default of.  :data:`DYNAMIC_ONLY` declares
Kafka's dynamic configs that have no setting here.  From these declarations come :data:`SETTINGS`
(every name), the dynamic sets (:data:`DYNAMIC_SETTINGS`, :data:`DYNAMIC_WITHOUT_EFFECT`,
:data:`PER_BROKER_ONLY`), the topic-config synonyms (:data:`TOPIC_SYNONYMS`, Kafka's
``ServerTopicConfigSynonyms``) and Kafka's hour/minute spellings (:data:`SPELLINGS`); the loader
(:mod:`broker.config.loader`) parses by them, DescribeConfigs reports by them, and
:mod:`broker.config.docs` writes the README's settings tables from them.

Every component reads ``config.<attribute>``; a secret (PASSWORD) stays out of ``repr``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.config.declare import (
    BOOLEAN,
    CLASS,
    DECLARATION,
    DOUBLE,
    INT,
    LIST,
    LONG,
    PASSWORD,
    SHORT,
    STRING,
    Dynamic,
    Group,
    Setting,
    at_least,
    between,
    dynamic_only,
    one_of,
    setting,
)

__all__ = [
    "DYNAMIC_ONLY", "DYNAMIC_SETTINGS", "DYNAMIC_WITHOUT_EFFECT", "ENV_PREFIX", "FIELD_SETTINGS", "NON_SETTING_ENV",
    "PER_BROKER_ONLY", "SETTINGS", "SPELLINGS", "TOPIC_SYNONYMS", "BrokerConfig", "broker_log_defaults", "console_address",
    "declared", "is_dynamic", "is_sensitive", "kafka_settings", "known_settings", "setting_name", "split_list",
    "text",
]

ENV_PREFIX = "KBROKER_"

#: ``KBROKER_*`` environment variables that are read elsewhere and are not settings: the TOML file (the
#: loader), the log format (``broker.observability.logging_setup``), the admin CLI's bootstrap, and whether
#: the request path's modules run compiled (``protocol.compiled``).
NON_SETTING_ENV = frozenset({"KBROKER_CONFIG", "KBROKER_LOG_FORMAT", "KBROKER_BOOTSTRAP", "KBROKER_PURE_PYTHON"})

_KIB, _MIB, _GIB = 1024, 1024 * 1024, 1024 * 1024 * 1024
_MINUTE, _HOUR, _DAY = 60_000, 3_600_000, 86_400_000
_LONG_MAX, _INT_MAX = 2**63 - 1, 2**31 - 1

P, LIM, TOP, LOG = Group.PROCESS, Group.LIMITS, Group.TOPICS, Group.LOG
CMP, GRP, CG, TXN = Group.COMPACTION, Group.GROUPS, Group.CONSUMER_GROUPS, Group.TRANSACTIONS
CLU, REP, SEC, CON = Group.CLUSTER, Group.REPLICATION, Group.SECURITY, Group.CONSOLE
SG = Group.SHARE_GROUPS
YES = Dynamic.YES


@dataclass
class BrokerConfig:
    # -- the broker process
    host: str = setting("127.0.0.1", STRING, P, "The address the broker listens on when `listeners` is not set.")
    port: int = setting(9092, INT, P, "The port it listens on when `listeners` is not set (0: any free port).")
    advertised_listener: str | None = setting(
        None, STRING, P, "`host:port` clients are told to connect to, when it is not the listen address (behind "
        "NAT, in a container).", default_text="the listen address")
    data_dir: str = setting("./data", STRING, P, "The data directory: partition logs, checkpoints and (without "
                            "`cluster`) the cluster metadata.")
    metrics_port: int | None = setting(
        None, INT, P, "The port of the Prometheus `/metrics` endpoint (0: none).", command_default=9464)
    metrics_host: str | None = setting(None, STRING, P, "The interface the metrics endpoint listens on.",
                                       default_text="`host`")
    node_id: int = setting(1, INT, P, "This broker's id, unique in the cluster; a data directory belongs to one "
                           "node id.")
    broker_rack: str | None = setting(None, STRING, CLU, "The rack of this broker: the replicas of a partition are "
                                      "spread over racks.")

    # -- cluster: without `cluster` the broker keeps its metadata in the data directory (one node)
    cluster: str | None = setting(
        None, STRING, CLU, "The etcd endpoints holding the cluster's metadata (`etcd://HOST:PORT[,HOST:PORT...]`); "
        "without it the broker is a cluster of one that keeps the same state in its data directory.")
    cluster_id: str = setting("kbroker", STRING, CLU, "Keeps several clusters apart in one etcd.")
    broker_session_timeout_ms: int = setting(
        3000, LONG, CLU, "The etcd lease of a broker's registration: a broker that died is noticed within this "
        "time.", validator=at_least(3))
    etcd_request_timeout_ms: int | None = setting(
        None, LONG, CLU, "One attempt of one etcd call on one etcd member; a member that does not answer in time, or "
        "cannot be reached, is left for the next one in `cluster` (brokers start on member `node.id` mod N, so a "
        "slow member holds up only the brokers it serves and none loses its registration).",
        default_text="a third of `broker.session.timeout.ms` (also the most allowed)")
    default_replication_factor: int = setting(1, INT, TOP, "Replicas of created topics that do not say.")
    min_insync_replicas: int = setting(
        1, INT, REP, "In-sync replicas an `acks=all` produce needs: with fewer it is refused with "
        "NOT_ENOUGH_REPLICAS and nothing is appended.", dynamic=YES, topic="min.insync.replicas")
    #: None: 3 in a cluster (as Kafka), 1 for a single broker
    offsets_topic_replication_factor: int | None = setting(
        None, INT, GRP, "Replicas of `__consumer_offsets`, created once that many brokers are alive (until then "
        "FindCoordinator answers COORDINATOR_NOT_AVAILABLE).", default_text="3 (1 without `cluster`)")
    replica_lag_time_max_ms: int = setting(
        30_000, LONG, REP, "A follower that has not caught up with the leader for this long leaves the ISR; it "
        "rejoins once it has.")
    unclean_leader_election_enable: bool = setting(
        False, BOOLEAN, REP, "When the last in-sync replica of a partition dies, elect an out-of-sync one rather than "
        "leave the partition offline (records it lacks are lost).", dynamic=YES,
        topic="unclean.leader.election.enable")
    controlled_shutdown_enable: bool = setting(
        True, BOOLEAN, CLU, "On SIGTERM, hand every leadership over to an in-sync follower that has the whole log "
        "before stopping.")
    controlled_shutdown_timeout_ms: int = setting(
        5000, LONG, CLU, "How long a controlled shutdown may wait for followers to catch up before the broker "
        "stops anyway.")
    leader_replication_throttled_rate: int = setting(
        _LONG_MAX, LONG, REP, "Bytes/s this broker, as leader, sends of the replicas the topic config "
        "`leader.replication.throttled.replicas` lists, to followers that are not in sync (a reassignment's "
        "copy; in-sync followers are never held back).", dynamic=YES, validator=at_least(0),
        default_text="unlimited")
    follower_replication_throttled_rate: int = setting(
        _LONG_MAX, LONG, REP, "Bytes/s this broker, as a follower that is not in sync, fetches of the replicas the "
        "topic config `follower.replication.throttled.replicas` lists.", dynamic=YES, validator=at_least(0),
        default_text="unlimited")
    replication_quota_window_num: int = setting(11, INT, REP, "The windows the throttled rates are measured over.",
                                                validator=at_least(1))
    replication_quota_window_size_seconds: int = setting(1, INT, REP, "The length of one of those windows.",
                                                         validator=at_least(1))
    replica_selector_class: str | None = setting(
        None, CLASS, REP, "`org.apache.kafka.common.replica.RackAwareReplicaSelector`: a consumer that gives its "
        "`client.rack` reads from an in-sync replica in its rack (KIP-392); unset, consumers read from leaders.",
        validator=one_of(None, "", "org.apache.kafka.common.replica.RackAwareReplicaSelector"))
    replica_fetch_wait_max_ms: int = setting(500, LONG, REP, "How long a follower's fetch waits at the leader for "
                                             "new records (its long poll).")
    replica_fetch_min_bytes: int = setting(1, LONG, REP, "The bytes a follower's fetch waits for.")
    replica_fetch_max_bytes: int = setting(8 * _MIB, LONG, REP, "The most a follower fetches of one partition in "
                                           "one request (Kafka's default is 1 MiB; a fetch round costs this broker "
                                           "more, so one carries more).")
    replica_fetch_response_max_bytes: int = setting(10 * _MIB, LONG, REP, "The most a follower fetches in one "
                                                    "request, over all partitions.")
    replica_fetch_backoff_ms: int = setting(1000, LONG, REP, "How long a follower waits before fetching again "
                                            "after a failed fetch.")
    replica_socket_timeout_ms: int = setting(30_000, LONG, REP, "A follower's fetch not answered within this time "
                                             "(beyond its wait) fails and is retried.")
    partition_autobalancer_mode: str = setting(
        "off", STRING, CLU, "`node_add`: a broker that joins holding no replica gets its share of every topic's "
        "replicas and preferred leaders, moved by reassignments (as Redpanda's setting of that name); `off`: "
        "partitions move only when asked.", dynamic=YES, validator=one_of("off", "node_add"))
    auto_leader_rebalance_enable: bool = setting(
        True, BOOLEAN, CLU, "Preferred leaders (the first replica of each partition) take their partitions back "
        "when a broker holds too many leaderships that are not its own.")
    leader_imbalance_check_interval_seconds: int = setting(300, INT, CLU, "How often the controller checks the "
                                                           "leaderships' balance.")
    leader_imbalance_per_broker_percentage: int = setting(
        10, INT, CLU, "The share of a broker's preferred partitions led by others above which they move back.")

    # -- listeners and security (Kafka's names; see README "Security").  Without `listeners` the broker
    # listens on host:port in PLAINTEXT and advertises advertised_listener (or host:port).
    listeners: str | None = setting(
        None, LIST, SEC, "`NAME://host:port,...`, one port each, any of `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, "
        "`SASL_SSL` (or names mapped in `listener.security.protocol.map`); replaces `host`/`port`; an empty host "
        "or `0.0.0.0` binds every interface.", default_text="none (`PLAINTEXT://host:port`)")
    advertised_listeners: str | None = setting(
        None, LIST, SEC, "What Metadata, FindCoordinator and DescribeCluster answer: every client gets the address "
        "of the listener it came in on.", default_text="each listener's own address")
    listener_security_protocol_map: str | None = setting(
        None, STRING, SEC, "The security protocol of listeners with other names (`INTERNAL:SASL_SSL,...`).")
    inter_broker_listener_name: str | None = setting(
        None, STRING, SEC, "The listener the brokers of a cluster reach each other on.",
        default_text="the first listener")
    ssl_certfile: str | None = setting(None, STRING, SEC, "The broker's PEM certificate chain (also its client "
                                       "certificate towards other brokers).")
    ssl_keyfile: str | None = setting(None, STRING, SEC, "The broker's PEM private key.")
    ssl_keyfile_password: str | None = setting(None, PASSWORD, SEC, "The password of an encrypted `ssl.keyfile` "
                                               "(never logged or shown).")
    ssl_cafile: str | None = setting(None, STRING, SEC, "CA certificates that sign client certificates, and "
                                     "(between brokers) the other brokers'.")
    ssl_client_auth: str = setting("none", STRING, SEC, "`requested` or `required`: ask TLS clients for a "
                                   "certificate; the principal is then `User:<certificate CN>`.")
    ssl_endpoint_identification_algorithm: str = setting(
        "https", STRING, SEC, "`https`: a broker connecting to another over TLS checks the host name in its "
        "certificate; empty: it does not.")
    ssl_handshake_timeout_ms: int = setting(10_000, LONG, SEC, "A TLS handshake not finished in this time closes "
                                            "the connection.", validator=at_least(1, "must be positive"))
    sasl_enabled_mechanisms: str = setting("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", STRING, SEC,
                                           "The SASL mechanisms clients may log in with.")
    sasl_users_file: str | None = setting(
        None, STRING, SEC, "`name:password` lines; at every start each named user gets credentials for that "
        "password (SCRAM, 4096 iterations, salted; PLAIN checks the same), so the file wins for the users it names. "
        "Users added with `kbroker users` / AlterUserScramCredentials live in the metadata store.")
    sasl_server_max_receive_size: int = setting(64 * _KIB, INT, SEC, "A frame or SASL token larger than this before "
                                                "login closes the connection.")
    connections_max_reauth_ms: int = setting(0, LONG, SEC, "With a value, a SASL session ends after it unless the "
                                             "client re-authenticates (KIP-368).")
    connection_failed_authentication_delay_ms: int = setting(
        100, LONG, SEC, "A failed login is answered at once and its connection closed only after this delay (slowing "
        "password guessing without holding up anyone else).", validator=at_least(0, "must not be negative"))
    sasl_mechanism_inter_broker_protocol: str = setting(
        "SCRAM-SHA-512", STRING, SEC, "How a broker logs in to the others on a SASL inter-broker listener.")
    inter_broker_sasl_username: str | None = setting(
        None, STRING, SEC, "The broker's own user name there (required in a cluster whose inter-broker listener "
        "uses SASL).")
    inter_broker_sasl_password: str | None = setting(None, PASSWORD, SEC, "The broker's own password there (never "
                                                     "logged or shown).")
    authorizer_enabled: bool = setting(False, BOOLEAN, SEC, "Check every request against the ACLs.")
    super_users: str | None = setting(None, STRING, SEC, "`User:admin;User:ops`: principals allowed everything.")
    allow_everyone_if_no_acl_found: bool = setting(False, BOOLEAN, SEC, "When no ACL names a resource at all, allow "
                                                   "instead of deny.")
    authorizer_cache_entries: int = setting(1024, INT, SEC, "Per connection, authorization decisions kept until the "
                                            "ACLs change.", validator=at_least(1))

    # -- connection limits
    max_frame_bytes: int = setting(100 * _MIB, LONG, LIM, "A request frame larger than this closes the connection.")
    max_connections: int = setting(10_000, INT, LIM, "Connections beyond this many are closed as they arrive.",
                                   dynamic=YES)
    connections_max_idle_ms: int = setting(
        600_000, LONG, LIM, "A connection with nothing read or written for this long is closed, also when its client "
        "stopped reading responses.")
    max_in_flight_requests_per_connection: int = setting(
        1_000, INT, LIM, "Requests of one connection read and not answered yet; at the limit the connection is not "
        "read until answers go out.")
    queued_max_response_bytes_per_connection: int = setting(
        64 * _MIB, INT, LIM, "Answered responses (record data included) waiting to be written to one connection; "
        "past it the connection's further requests wait, unread, until its client reads (one response is always "
        "allowed).")
    queued_max_response_bytes: int = setting(
        _GIB, LONG, LIM, "The same over all connections: past it, only connections with nothing waiting get a "
        "request handled.")
    connection_write_buffer_bytes: int = setting(
        4 * _MIB, LONG, LIM, "The in-memory write buffer of a connection. Fetch record data never enters it: it is "
        "sent from the segment files with `sendfile`; where `sendfile` cannot be used (TLS) it is copied in pieces "
        "that keep the buffer at about this size.")
    fetch_purgatory_purge_interval_requests: int = setting(
        1000, INT, LIM, "Completed or expired long-poll fetches are purged from their partitions' watch lists "
        "whenever this many have piled up, and whenever none is left waiting.")

    # -- topics and logs
    auto_create_topics_enable: bool = setting(True, BOOLEAN, TOP, "Metadata requests create the unknown topics they "
                                              "name.")
    num_partitions: int = setting(1, INT, TOP, "Partitions of created topics that do not say (auto-created ones "
                                  "too).")
    max_partitions_per_request: int = setting(
        10_000, INT, TOP, "The most partitions one CreateTopics or CreatePartitions request may create, over all of "
        "its topics (Kafka's controller takes at most 10,000 in one metadata batch); a request asking for more is "
        "refused whole, POLICY_VIOLATION for each of its topics. Each partition holds open files and memory.",
        validator=at_least(1))
    delete_topic_enable: bool = setting(True, BOOLEAN, TOP, "DeleteTopics deletes; false: it is refused with "
                                        "TOPIC_DELETION_DISABLED.")
    message_max_bytes: int = setting(1_048_588, INT, LOG, "The largest record batch a topic takes, as produced and "
                                     "as stored.", dynamic=YES, topic="max.message.bytes")
    message_max_decompressed_bytes: int = setting(
        64 * _MIB, LONG, LIM, "A produced batch recompressed to its topic's `compression.type` may inflate to this "
        "much when decoded (beyond: CORRUPT_MESSAGE), so a compression bomb costs bounded memory.")
    fetch_max_bytes: int = setting(55 * _MIB, LONG, LIM, "The most record data one Fetch response carries.")
    log_segment_bytes: int = setting(_GIB, INT, LOG, "A segment rolls before it would grow past this size.",
                                     dynamic=YES, topic="segment.bytes")
    log_roll_ms: int = setting(7 * _DAY, LONG, LOG, "A segment rolls once its first record is this old.",
                               dynamic=YES, topic="segment.ms", units=(("log.roll.hours", _HOUR),))
    log_retention_ms: int = setting(
        7 * _DAY, LONG, LOG, "Segments whose records are all older than this are deleted (-1: never).", dynamic=YES,
        topic="retention.ms", units=(("log.retention.minutes", _MINUTE), ("log.retention.hours", _HOUR)))
    log_retention_bytes: int = setting(-1, LONG, LOG, "A partition larger than this loses its oldest segments (-1: "
                                       "no limit).", dynamic=YES, topic="retention.bytes")
    log_retention_check_interval_ms: int = setting(300_000, LONG, LOG, "How often retention is checked.")
    log_message_timestamp_type: str = setting(
        "CreateTime", STRING, LOG, "The records' timestamp: `CreateTime` (the producer's) or `LogAppendTime` (the "
        "broker's).", dynamic=YES, topic="message.timestamp.type")
    # flush policy: every append is written to the OS before it is acknowledged, so
    # a process crash never loses an acknowledged record; these add fsyncs on top.
    log_flush_interval_messages: int = setting(
        _LONG_MAX, LONG, LOG, "With N, the append that makes N unfsynced messages of a partition fsyncs before it is "
        "acknowledged (1: every append).", dynamic=YES, topic="flush.messages")
    log_flush_interval_ms: int | None = setting(
        250, LONG, LOG, "A partition with unfsynced data is fsynced, off the event loop, once its `flush.ms` "
        "(this, unless the topic sets its own) has passed since its last flush; due partitions are looked for at "
        "this interval, clamped to 50 ms-1 s. Every append reaches the OS before it is acknowledged, so a process "
        "crash loses nothing; this bounds what a machine crash can lose. Only a successful fsync moves the "
        "partition's recovery point.", dynamic=YES, topic="flush.ms")
    # the other broker-level defaults of topic configs (Kafka's names; see broker.log.config)
    log_cleanup_policy: str = setting("delete", LIST, LOG, "`delete` (retention), `compact` (the latest record of "
                                      "each key is kept) or both.", dynamic=YES, topic="cleanup.policy")
    log_roll_jitter_ms: int = setting(
        0, LONG, LOG, "The most a segment's roll is moved earlier at random, so partitions do not roll together.",
        dynamic=YES, topic="segment.jitter.ms", units=(("log.roll.jitter.hours", _HOUR),))
    log_index_interval_bytes: int = setting(4096, INT, LOG, "Bytes between two entries of a segment's offset index.",
                                            dynamic=YES, topic="index.interval.bytes")
    log_index_size_max_bytes: int = setting(10 * _MIB, INT, LOG, "The largest offset index of a segment; a full "
                                            "index rolls the segment.", dynamic=YES, topic="segment.index.bytes")
    log_segment_delete_delay_ms: int = setting(60_000, LONG, LOG, "How long a deleted segment's files stay on disk "
                                               "for the reads still using them.", dynamic=YES,
                                               topic="file.delete.delay.ms")
    log_message_timestamp_before_max_ms: int = setting(
        _LONG_MAX, LONG, LOG, "How far in the past a record's CreateTime may be (beyond: INVALID_TIMESTAMP).",
        dynamic=YES, topic="message.timestamp.before.max.ms")
    log_message_timestamp_after_max_ms: int = setting(
        _LONG_MAX, LONG, LOG, "How far in the future a record's CreateTime may be (beyond: INVALID_TIMESTAMP).",
        dynamic=YES, topic="message.timestamp.after.max.ms")
    log_preallocate: bool = setting(False, BOOLEAN, LOG, "Accepted and reported; segment files grow as written "
                                    "here.", dynamic=YES, topic="preallocate")
    compression_type: str = setting(
        "producer", STRING, LOG, "`producer` stores batches as produced; `uncompressed`, `gzip`, `snappy`, `lz4` or "
        "`zstd` stores every batch in that codec, recompressing those that arrive in another.", dynamic=YES,
        topic="compression.type")
    compression_gzip_level: int = setting(-1, INT, LOG, "The gzip level of recompressed batches (1-9; -1: the "
                                          "codec's default).", dynamic=YES, topic="compression.gzip.level")
    compression_lz4_level: int = setting(9, INT, LOG, "The lz4 level of recompressed batches (1-17).", dynamic=YES,
                                         topic="compression.lz4.level")
    compression_zstd_level: int = setting(3, INT, LOG, "The zstd level of recompressed batches (-131072-22).",
                                          dynamic=YES, topic="compression.zstd.level")

    # -- log compaction (cleanup.policy=compact): the defaults of the topic configs, and the cleaner
    log_cleaner_delete_retention_ms: int = setting(
        _DAY, LONG, CMP, "How long a tombstone is kept after the pass that first cleaned it.", dynamic=YES,
        topic="delete.retention.ms")
    log_cleaner_min_compaction_lag_ms: int = setting(0, LONG, CMP, "Records younger than this are not compacted.",
                                                     dynamic=YES, topic="min.compaction.lag.ms")
    log_cleaner_max_compaction_lag_ms: int = setting(
        _LONG_MAX, LONG, CMP, "A log whose oldest uncleaned record is older than this is cleaned whatever its dirty "
        "share (and a compacted topic's active segment rolls within this time).", dynamic=YES,
        topic="max.compaction.lag.ms")
    log_cleaner_min_cleanable_ratio: float = setting(
        0.5, DOUBLE, CMP, "A log is cleaned once more than this share of it is not cleaned yet.", dynamic=YES,
        topic="min.cleanable.dirty.ratio")
    log_cleaner_dedupe_buffer_size: int = setting(
        128 * _MIB, INT, CMP, "Memory for one cleaning pass's key map (about 160 bytes per distinct key); a pass "
        "cleans up to where it is full and the next one continues.", dynamic=YES)
    log_cleaner_backoff_ms: int = setting(15_000, LONG, CMP, "How often compacted logs are checked for something to "
                                          "clean (also after each flush).", dynamic=YES)

    # -- group coordinator
    group_initial_rebalance_delay_ms: int = setting(
        3000, LONG, GRP, "How long a new classic group waits for more members before its first rebalance (0 in "
        "the embedded test broker).")
    group_min_session_timeout_ms: int = setting(6000, LONG, GRP, "The shortest session timeout a classic member may "
                                                "ask for (else INVALID_SESSION_TIMEOUT).")
    group_max_session_timeout_ms: int = setting(1_800_000, LONG, GRP, "The longest session timeout a classic member "
                                                "may ask for.")
    group_max_size: int = setting(_INT_MAX, INT, GRP, "Members a classic group may have (more: "
                                  "GROUP_MAX_SIZE_REACHED).")
    # KIP-848 consumer groups (Kafka's group.consumer.* with its bounds)
    group_consumer_heartbeat_interval_ms: int = setting(
        5000, LONG, CG, "The heartbeat interval members are given; within `group.consumer.min/max.heartbeat."
        "interval.ms` and below the session timeout (a group config may set its own).")
    group_consumer_min_heartbeat_interval_ms: int = setting(5000, LONG, CG, "The lowest heartbeat interval, of the "
                                                            "broker and of group configs.", validator=at_least(1))
    group_consumer_max_heartbeat_interval_ms: int = setting(15_000, LONG, CG, "The highest heartbeat interval.")
    group_consumer_session_timeout_ms: int = setting(
        45_000, LONG, CG, "A member that does not heartbeat for this long is fenced and its partitions move; within "
        "`group.consumer.min/max.session.timeout.ms` (a group config may set its own).")
    group_consumer_min_session_timeout_ms: int = setting(45_000, LONG, CG, "The lowest session timeout, of the "
                                                         "broker and of group configs.", validator=at_least(1))
    group_consumer_max_session_timeout_ms: int = setting(60_000, LONG, CG, "The highest session timeout.")
    group_consumer_assignment_interval_ms: int = setting(
        1000, LONG, CG, "A consumer group computes a new target assignment at most once per interval: the members "
        "that join, leave or change their subscriptions within it share one assignor run (0: a run per change).",
        validator=at_least(0))
    group_consumer_assignors: str = setting("uniform,range", STRING, CG, "The server-side assignors a member may ask "
                                            "for (`uniform`, `range`); the first is the default.")
    group_consumer_max_size: int = setting(_INT_MAX, INT, CG, "Members a consumer group may have (more: "
                                           "GROUP_MAX_SIZE_REACHED).", validator=at_least(1))
    # KIP-932 share groups (Kafka's group.share.* with its bounds; share.version 1, on by default as in 4.2)
    group_share_heartbeat_interval_ms: int = setting(
        5000, INT, SG, "The heartbeat interval share-group members are given; within `group.share.min/max."
        "heartbeat.interval.ms` and below the session timeout (a group config may set its own).")
    group_share_min_heartbeat_interval_ms: int = setting(5000, INT, SG, "The lowest heartbeat interval, of the "
                                                         "broker and of group configs.", validator=at_least(1))
    group_share_max_heartbeat_interval_ms: int = setting(15_000, INT, SG, "The highest heartbeat interval.")
    group_share_session_timeout_ms: int = setting(
        45_000, INT, SG, "A share-group member that does not heartbeat for this long is removed and its records' "
        "locks end; within `group.share.min/max.session.timeout.ms` (a group config may set its own).")
    group_share_min_session_timeout_ms: int = setting(45_000, INT, SG, "The lowest session timeout, of the broker "
                                                      "and of group configs.", validator=at_least(1))
    group_share_max_session_timeout_ms: int = setting(60_000, INT, SG, "The highest session timeout.")
    group_share_max_size: int = setting(200, SHORT, SG, "Members a share group may have (more: "
                                        "GROUP_MAX_SIZE_REACHED).", validator=between(1, 1000))
    group_share_assignors: str = setting("simple", LIST, SG, "The share-group assignor (only `simple`, which lets "
                                         "several members share a partition).", validator=one_of("simple"))
    group_share_delivery_count_limit: int = setting(
        5, INT, SG, "Deliveries of a record before it is archived instead of delivered again (a poison record); "
        "a group config may set its own.", validator=between(2, 10))
    group_share_record_lock_duration_ms: int = setting(
        30_000, INT, SG, "How long a record acquired by a member stays locked to it before it is available again; "
        "within `group.share.min/max.record.lock.duration.ms` (a group config may set its own).")
    group_share_min_record_lock_duration_ms: int = setting(15_000, INT, SG, "The lowest record lock duration, of "
                                                           "the broker and of group configs.",
                                                           validator=at_least(1))
    group_share_max_record_lock_duration_ms: int = setting(60_000, INT, SG, "The highest record lock duration.")
    group_share_partition_max_record_locks: int = setting(
        2000, INT, SG, "Records in flight (acquired or available again) per share-partition; a group config may "
        "set its own.", validator=between(100, 10000))
    group_share_max_share_sessions: int = setting(
        2000, INT, SG, "Share sessions this broker keeps (more: SHARE_SESSION_LIMIT_REACHED); at least "
        "`group.share.max.size`.", validator=at_least(1))
    group_share_initialize_retry_interval_ms: int = setting(
        30_000, INT, SG, "How long the group coordinator waits before retrying a failed initialisation of share "
        "state.", validator=at_least(1))
    # the share coordinator (``__share_group_state``)
    share_coordinator_state_topic_num_partitions: int = setting(
        50, INT, SG, "Partitions of `__share_group_state` when it is created.", validator=at_least(1))
    #: None: 3 in a cluster (as Kafka), 1 for a single broker
    share_coordinator_state_topic_replication_factor: int | None = setting(
        None, SHORT, SG, "Replicas of `__share_group_state`.", default_text="3 (1 without `cluster`)")
    share_coordinator_state_topic_min_isr: int = setting(
        2, SHORT, SG, "`min.insync.replicas` of `__share_group_state` (capped at its replication factor).",
        validator=at_least(1))
    share_coordinator_state_topic_segment_bytes: int = setting(100 * _MIB, INT, SG, "The segment size of "
                                                               "`__share_group_state`.", validator=at_least(1))
    share_coordinator_snapshot_update_records_per_snapshot: int = setting(
        500, INT, SG, "ShareUpdate records of a share-partition between two ShareSnapshot records (a new "
        "share coordinator replays at most this many).", validator=at_least(0))
    share_coordinator_write_timeout_ms: int = setting(5000, INT, SG, "How long a write of share state may take "
                                                      "before it fails.", validator=at_least(1))
    offsets_topic_num_partitions: int = setting(
        50, INT, GRP, "Partitions of `__consumer_offsets` when it is created; afterwards the topic's own count "
        "places groups (changing the setting later loses nothing).", validator=at_least(1))
    offsets_retention_minutes: int = setting(10080, INT, GRP, "How long the committed offsets of a group without "
                                             "members are kept.")
    offsets_retention_check_interval_ms: int = setting(600_000, LONG, GRP, "How often expired offsets are looked "
                                                       "for.")
    offset_metadata_max_bytes: int = setting(4096, LONG, GRP, "The longest metadata of a committed offset (longer: "
                                             "OFFSET_METADATA_TOO_LARGE).")
    offsets_topic_compression_codec: int = setting(
        0, INT, GRP, "How the group coordinator compresses its batches in `__consumer_offsets`: 0 none, 1 gzip, "
        "2 snappy, 3 lz4, 4 zstd. A classic group's metadata holds every member, so a group of thousands may "
        "need it (or a larger `message.max.bytes`) to be stored at all.", validator=one_of(0, 1, 2, 3, 4))

    # -- transaction coordinator
    transaction_state_log_num_partitions: int = setting(50, INT, TXN, "Partitions of `__transaction_state` when it "
                                                        "is created.", validator=at_least(1))
    #: None: 3 in a cluster (as Kafka), 1 for a single broker
    transaction_state_log_replication_factor: int | None = setting(
        None, INT, TXN, "Replicas of `__transaction_state`.", default_text="3 (1 without `cluster`)")
    transaction_state_log_min_isr: int = setting(2, INT, TXN, "`min.insync.replicas` of `__transaction_state` "
                                                 "(capped at its replication factor).")
    transaction_state_log_segment_bytes: int = setting(100 * _MIB, LONG, TXN, "The segment size of "
                                                       "`__transaction_state`.")
    transaction_max_timeout_ms: int = setting(
        900_000, LONG, TXN, "The longest `transaction.timeout.ms` a producer may ask for (longer: "
        "INVALID_TRANSACTION_TIMEOUT).", validator=at_least(1))
    transactional_id_expiration_ms: int = setting(7 * _DAY, LONG, TXN, "A transactional id idle for this long is "
                                                  "forgotten.")
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = setting(
        10_000, LONG, TXN, "A transaction past its timeout that was busy (a state change being written) is looked at "
        "again after this.")
    transaction_marker_request_timeout_ms: int = setting(
        30_000, LONG, TXN, "The timeout of the markers and coordinator checks brokers send each other.")
    transaction_marker_retry_backoff_ms: int = setting(100, LONG, TXN, "How long a failed marker or check waits "
                                                       "before it is sent again.")

    # -- the web console (broker.console)
    console_listener: str | None = setting(
        None, STRING, CON, "Where the web console listens: `http://HOST:PORT` (port 0: any free port); `none` turns "
        "it off. Without SASL listeners the console is open to whoever reaches it: keep it on 127.0.0.1 unless the "
        "broker requires SASL.", validator=lambda v: console_address(v, None), command_default="http://127.0.0.1:9080")
    console_port: str = setting(
        "", STRING, CON, "Shorthand for the port of `console.listener` (`--console-port`); `none` turns the "
        "console off.", validator=lambda v: console_address(None, v), default_text="the port of `console.listener`")
    console_refresh_ms: int = setting(5000, LONG, CON, "How often an open page (in a visible tab) refreshes its "
                                      "figures.", validator=at_least(500))
    console_session_timeout_ms: int = setting(
        3_600_000, LONG, CON, "A login unused for this long ends (SASL brokers: the user logs in again).",
        validator=at_least(1000))
    console_max_sessions: int = setting(1000, INT, CON, "Console sessions kept at once; beyond, the least recently "
                                        "used ends.", validator=at_least(1))
    console_page_size: int = setting(100, INT, CON, "Rows of a table on one page (topics, partitions, groups, "
                                     "offsets).", validator=at_least(1))
    console_records_max: int = setting(500, INT, CON, "The most records one look in the record browser fetches.",
                                       validator=at_least(1))
    console_record_view_bytes: int = setting(
        4096, INT, CON, "Keys, values and headers longer than this are cut short in the record browser (the record "
        "is not changed).", validator=at_least(16))
    console_history_interval_ms: int = setting(
        10_000, LONG, CON, "How often the broker samples its throughput, request rates and groups' lag for the "
        "console's charts; the last hour of samples is kept.", validator=at_least(1000))

    # -- operation
    log_level: str = setting("INFO", STRING, P, "The level of the broker's log lines: DEBUG, INFO, WARNING or "
                             "ERROR.")
    event_loop_stall_warn_ms: int = setting(
        1000, LONG, P, "When the event loop (every connection, timer and coordinator of the broker) has run no timer "
        "for this long, a warning names the request it is handling (API, version, correlation id, client id and "
        "address), if any, and the stack its thread is in, once a stall (0: never).  How late its timers run "
        "is the `kbroker_event_loop_lag_seconds` histogram either way.", validator=at_least(0))

    @property
    def advertised_host_port(self) -> tuple[str, int]:
        if self.advertised_listener:
            host, _, port = self.advertised_listener.rpartition(":")
            return host or self.host, int(port)
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "localhost"
        return host, self.port

    def with_overrides(self, **overrides: Any) -> BrokerConfig:
        return dataclasses.replace(self, **overrides)

    @property
    def console_address(self) -> tuple[str, int] | None:
        """Where the web console listens (``console.listener``, its port replaced by ``console.port``); None: off."""
        return console_address(self.console_listener, self.console_port)

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def offsets_replication_factor(self) -> int:
        if self.offsets_topic_replication_factor is not None:
            return self.offsets_topic_replication_factor
        return 3 if self.cluster else 1

    @property
    def etcd_request_timeout(self) -> float:
        """``etcd.request.timeout.ms`` in seconds (derived from the session timeout when not set)."""
        if self.etcd_request_timeout_ms is not None:
            return self.etcd_request_timeout_ms / 1000
        return self.broker_session_timeout_ms / 3000

    @property
    def share_state_replication_factor(self) -> int:
        if self.share_coordinator_state_topic_replication_factor is not None:
            return self.share_coordinator_state_topic_replication_factor
        return 3 if self.cluster else 1

    @property
    def transaction_state_replication_factor(self) -> int:
        if self.transaction_state_log_replication_factor is not None:
            return self.transaction_state_log_replication_factor
        return 3 if self.cluster else 1


_POSITIVE = at_least(1)
_KERBEROS = "Kerberos login (no Kerberos here)."
_TOKEN_LOGIN = "SASL token login refresh (no token login here)."

#: Kafka's other dynamic broker configs, accepted, stored and reported like the rest, with nothing to tune
#: here: thread pools (this broker has one event loop and one cleaner thread), Kafka's flush scheduler
#: (flushes are checked every log.flush.interval.ms), tiered storage's local retention, and the Kerberos /
#: token-login refresh settings (no such login here; per broker only, as in Kafka).
DYNAMIC_ONLY: tuple[Setting, ...] = (
    dynamic_only("num.io.threads", INT, "Kafka's request handler threads (one event loop here).", validator=_POSITIVE),
    dynamic_only("num.network.threads", INT, "Kafka's network threads.", validator=_POSITIVE),
    dynamic_only("num.replica.fetchers", INT, "Kafka's fetcher threads per source broker.", validator=_POSITIVE),
    dynamic_only("num.recovery.threads.per.data.dir", INT, "Kafka's log recovery threads.", validator=_POSITIVE),
    dynamic_only("background.threads", INT, "Kafka's background task threads.", validator=_POSITIVE),
    dynamic_only("log.cleaner.threads", INT, "Kafka's cleaner threads (one cleaner thread here).",
                 validator=_POSITIVE),
    dynamic_only("log.cleaner.io.buffer.size", INT, "Kafka's cleaner I/O buffer size.", validator=at_least(0)),
    dynamic_only("log.cleaner.io.buffer.load.factor", DOUBLE, "Kafka's cleaner key map load factor."),
    dynamic_only("log.cleaner.io.max.bytes.per.second", DOUBLE, "Kafka's cleaner I/O throttle (no throttle here)."),
    dynamic_only("log.flush.scheduler.interval.ms", LONG, "Kafka's flush scheduler interval (flushes are checked "
                 "every `log.flush.interval.ms` here).", topic="flush.ms"),
    dynamic_only("log.local.retention.ms", LONG, "Tiered storage's local retention time (no tiered storage here).",
                 topic="local.retention.ms"),
    dynamic_only("log.local.retention.bytes", LONG, "Tiered storage's local retention size (no tiered storage "
                 "here).", topic="local.retention.bytes"),
    dynamic_only("sasl.kerberos.kinit.cmd", STRING, _KERBEROS, per_broker_only=True),
    dynamic_only("sasl.kerberos.service.name", STRING, _KERBEROS, per_broker_only=True),
    dynamic_only("sasl.kerberos.min.time.before.relogin", LONG, _KERBEROS, per_broker_only=True),
    dynamic_only("sasl.kerberos.ticket.renew.jitter", DOUBLE, _KERBEROS, per_broker_only=True),
    dynamic_only("sasl.kerberos.ticket.renew.window.factor", DOUBLE, _KERBEROS, per_broker_only=True),
    dynamic_only("sasl.login.refresh.buffer.seconds", SHORT, _TOKEN_LOGIN, per_broker_only=True,
                 validator=at_least(0)),
    dynamic_only("sasl.login.refresh.min.period.seconds", SHORT, _TOKEN_LOGIN, per_broker_only=True,
                 validator=at_least(0)),
    dynamic_only("sasl.login.refresh.window.factor", DOUBLE, _TOKEN_LOGIN, per_broker_only=True),
    dynamic_only("sasl.login.refresh.window.jitter", DOUBLE, _TOKEN_LOGIN, per_broker_only=True),
)

_PYTHON_TYPES = {BOOLEAN: "bool", DOUBLE: "float", INT: "int", SHORT: "int", LONG: "int"}


def _field_settings() -> tuple[Setting, ...]:
    """The declarations of :class:`BrokerConfig`'s fields, completed with their name and attribute."""
    out = []
    for f in dataclasses.fields(BrokerConfig):
        declared: Setting = f.metadata[DECLARATION]
        annotation = str(f.type)
        if annotation.split(" |")[0] != _PYTHON_TYPES.get(declared.type, "str"):
            raise TypeError(f"BrokerConfig.{f.name}: {annotation} does not hold a {declared.type_name} setting")
        out.append(dataclasses.replace(declared, name=f.name.replace("_", "."), attr=f.name,
                                       nullable="None" in annotation))
    return tuple(out)


def _spellings(s: Setting) -> tuple[Setting, ...]:
    """Kafka's coarser spellings of millisecond setting ``s`` (``log.retention.hours``): dynamic configs only."""
    words = {_MINUTE: "minutes", _HOUR: "hours"}
    return tuple(Setting(name, LONG, None, s.group, f"`{s.name}` in {words[factor]}.", s.dynamic, topic=s.topic,
                         nullable=True, factor=factor, spelling_of=s.name) for name, factor in s.units)


#: Every field's declaration, in the order of :class:`BrokerConfig`.
FIELD_SETTINGS: tuple[Setting, ...] = _field_settings()

#: Every name this broker knows (Kafka's spelling): its settings, then their coarser spellings, then
#: :data:`DYNAMIC_ONLY`.
SETTINGS: dict[str, Setting] = {s.name: s for s in (*FIELD_SETTINGS,
                                                     *(sp for f in FIELD_SETTINGS for sp in _spellings(f)),
                                                     *DYNAMIC_ONLY)}

_BY_ATTR: dict[str, Setting] = {s.attr: s for s in FIELD_SETTINGS if s.attr is not None}

#: Dynamic settings this broker applies as they change: every broker-level default of a topic config
#: (``log.retention.ms``, ``message.max.bytes``, ``log.cleanup.policy``, ``compression.type``, ...,
#: including Kafka's hour/minute spellings), the log cleaner's memory and check interval, and the
#: connection limit.  See :mod:`broker.config.dynamic`.
DYNAMIC_SETTINGS: frozenset[str] = frozenset(n for n, s in SETTINGS.items() if s.dynamic is Dynamic.YES)

#: Kafka's dynamic configs accepted, stored and reported with nothing to tune here (:data:`DYNAMIC_ONLY`).
DYNAMIC_WITHOUT_EFFECT: frozenset[str] = frozenset(n for n, s in SETTINGS.items() if s.dynamic is Dynamic.STORED)

#: Dynamic configs Kafka takes per broker only, never as the cluster-wide default.
PER_BROKER_ONLY: frozenset[str] = frozenset(n for n, s in SETTINGS.items() if s.per_broker_only)

#: topic config -> the broker settings that give its default, highest priority first, each with the factor
#: that turns its unit into the topic config's (Kafka's ``ServerTopicConfigSynonyms``).
TOPIC_SYNONYMS: dict[str, tuple[tuple[str, int], ...]] = {
    topic: tuple((s.name, s.factor) for s in SETTINGS.values() if s.topic == topic)
    for topic in dict.fromkeys(s.topic for s in SETTINGS.values() if s.topic is not None)}

#: Kafka's coarser spelling -> (the millisecond setting it spells, its factor).
SPELLINGS: dict[str, tuple[str, int]] = {n: (s.spelling_of, s.factor) for n, s in SETTINGS.items()
                                         if s.spelling_of is not None}


def declared(name: str) -> Setting | None:
    """The declaration of ``name`` (Kafka's spelling, dynamic-only configs included); None if none."""
    return SETTINGS.get(name)


def known_settings() -> list[str]:
    """Every setting name, in Kafka's dotted spelling (``log.retention.ms``)."""
    return sorted(s.name for s in FIELD_SETTINGS)


def normalise(key: str) -> str:
    """A setting key written any way (``log.retention.ms``, ``log-retention-ms``) as an attribute name."""
    return key.strip().lower().replace(".", "_").replace("-", "_")


def setting_name(key: str) -> str | None:
    """The field behind a setting written any way (``log.retention.ms``, ``log_retention_ms``); None if none."""
    name = normalise(key)
    return name if name in _BY_ATTR else None


def by_attr(attr: str) -> Setting:
    """The declaration of :class:`BrokerConfig` attribute ``attr``."""
    return _BY_ATTR[attr]


def is_sensitive(key: str) -> bool:
    """Whether the setting behind ``key`` (any spelling) is a secret (PASSWORD type)."""
    name = setting_name(key)
    return name is not None and _BY_ATTR[name].sensitive


def is_dynamic(name: str) -> bool:
    return name in DYNAMIC_SETTINGS or name in DYNAMIC_WITHOUT_EFFECT


def text(value: Any) -> str:
    """A setting's value as Kafka writes it (``true``/``false`` for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def kafka_settings(config: BrokerConfig) -> dict[str, str]:
    """Every setting of ``config`` under its Kafka-style dotted name, as text (unset ones left out)."""
    out = {}
    for s in FIELD_SETTINGS:
        value = getattr(config, s.attr or "")
        if value is not None:
            out[s.name] = text(value)
    return out


def broker_log_defaults(config: BrokerConfig) -> dict[str, str]:
    """The topic-config defaults a broker configuration gives (Kafka's ``ServerTopicConfigSynonyms``):
    ``retention.ms`` from ``log.retention.ms``, ``max.message.bytes`` from ``message.max.bytes``, ..."""
    defaults: dict[str, str] = {}
    for s in FIELD_SETTINGS:
        value = getattr(config, s.attr or "")
        if s.topic is not None and value is not None and s.topic not in defaults:
            defaults[s.topic] = text(value)
    return defaults


def console_address(listener: str | None, port: str | None) -> tuple[str, int] | None:
    """``(host, port)`` of ``console.listener`` with ``console.port`` (its shorthand) applied; None when either
    is ``none`` (or the listener is unset and no port given).  ValueError says what a malformed value must be."""
    address: tuple[str, int] | None = None
    if listener is not None and listener.strip().lower() not in ("", "none"):
        scheme, sep, rest = listener.strip().partition("://")
        host, colon, number = rest.rstrip("/").rpartition(":")
        if scheme.lower() != "http" or not sep or not colon or not number.isdigit() or int(number) > 65535:
            raise ValueError("must be http://HOST:PORT or none")
        address = (host.strip("[]") or "127.0.0.1", int(number))
    if not port:
        return address
    if port.strip().lower() == "none":
        return None
    if not port.strip().isdigit() or int(port) > 65535:
        raise ValueError("must be a port number or none")
    return (address[0] if address is not None else "127.0.0.1", int(port))


def split_list(value: str | None) -> tuple[str, ...]:
    """A list setting (``uniform, range``) as its items."""
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())
