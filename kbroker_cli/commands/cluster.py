"""``kbroker cluster describe``: the cluster's brokers, its controller and the health of its partitions."""

from __future__ import annotations

import argparse
import json

from kbroker_cli.command import CommandGroup, json_flag
from kbroker_cli.common import EXIT_OK, Ctx, admin, replicas_and_isr, table

group = CommandGroup("cluster", "brokers, controller and partition health of the cluster")


@group.command("describe", "brokers, controller, under-replicated and offline partitions",
               json_flag("one JSON object"))
async def describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        desc = await client.describe_cluster()
        client.net.set_topics(None)
        md = await client.net.refresh_metadata()
    brokers = sorted(desc.brokers, key=lambda b: b.node_id)
    under, offline = [], []
    for name, t in sorted(md.topics.items()):
        for p, info in sorted(t.partitions.items()):
            row = {"topic": name, "partition": p, "leader": info.leader, "replicas": list(info.replicas),
                   "isr": list(info.isr)}
            if info.leader < 0:
                offline.append(row)
            elif len(info.isr) < len(info.replicas):
                under.append(row)
    data = {"cluster_id": desc.cluster_id, "controller": desc.controller_id,
            "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack} for b in brokers],
            "under_replicated_partitions": under, "offline_partitions": offline}
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    print(f"ClusterId: {desc.cluster_id}\tController: {desc.controller_id}\tBrokers: {len(brokers)}")
    table([["ID", "HOST", "PORT", "RACK", "ROLE"]] + [
        [str(b.node_id), b.host, str(b.port), b.rack or "-", "controller" if b.node_id == desc.controller_id else ""]
        for b in brokers])
    for title, rows in (("Under-replicated partitions", under), ("Offline partitions", offline)):
        print(f"{title}: {len(rows)}")
        for r in rows:
            print(f"\t{r['topic']}-{r['partition']}\tLeader: {r['leader']}\t{replicas_and_isr(r['replicas'], r['isr'])}")
    return EXIT_OK
