"""What security costs: produce and fetch throughput of ``python -m broker`` over each kind of listener,
and with the authorizer checking every request, beside a PLAINTEXT baseline measured in the same run.

    .venv/bin/python benchmarks/security.py [--size-mb 200]

Two brokers (subprocesses, temporary data dirs, a throwaway CA made with openssl):

* broker A: PLAINTEXT, SSL and SASL_SSL listeners, no authorizer;
* broker B: PLAINTEXT and SASL_PLAINTEXT listeners, ``authorizer.enabled=true``; the measured client
  is ``User:ANONYMOUS`` on PLAINTEXT, allowed by PREFIXED ACLs (so every request is checked, through
  the per-connection decision cache), the admin sets them up over SASL.

For each case a confluent-kafka producer writes ``--size-mb`` of 1000 B values (acks=1) to a fresh
one-partition topic and a consumer reads them back from the beginning.  Printed: MB/s per case and
the ratio to the PLAINTEXT baseline of broker A (fetch over PLAINTEXT uses sendfile; over TLS record
data is copied through the TLS layer).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import MB, consume, create_topic, produce

from broker.testing.harness import BrokerProcess

VALUE = 1000


def make_pki(d: Path) -> tuple[Path, Path, Path]:
    """A CA and a broker certificate for localhost / 127.0.0.1: (ca.pem, broker.pem, broker.key)."""
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench-ca")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "broker.key",
        "-out", "broker.csr", "-subj", "/CN=localhost")
    (d / "broker.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
        "-extfile", "broker.ext", "-out", "broker.pem")
    return d / "ca.pem", d / "broker.pem", d / "broker.key"


def measure(name: str, bootstrap: str, extra: dict, size_mb: int, admin: dict | None = None) -> tuple[float, float]:
    topic = "bench-" + "".join(c if c.isalnum() else "-" for c in name.lower())
    create_topic(bootstrap, topic, 1, admin if admin is not None else extra)
    secs, n = produce(bootstrap, topic, VALUE, "1", size_mb * MB, extra)
    produce_mbs = n * VALUE / MB / secs
    fsecs, nbytes = consume(bootstrap, topic, 1, n, extra)
    fetch_mbs = nbytes / MB / fsecs
    print(f"{name:<34} produce {produce_mbs:7.1f} MB/s   fetch {fetch_mbs:7.1f} MB/s", flush=True)
    return produce_mbs, fetch_mbs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=200, help="MB of 1000 B values per case")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kbroker-bench-sec-"))
    ca, cert, key = make_pki(tmp)
    users = tmp / "users.txt"
    users.write_text("admin:admin-secret\n")
    common = ["--log-level", "WARNING", "--set", f"ssl.certfile={cert}", "--set", f"ssl.keyfile={key}",
              "--set", f"sasl.users.file={users}"]
    a = BrokerProcess(tmp / "a", listeners=["PLAINTEXT", "SSL", "SASL_SSL"], extra_args=common)
    b = BrokerProcess(tmp / "b", listeners=["PLAINTEXT", "SASL_PLAINTEXT"], extra_args=[
        *common, "--set", "authorizer.enabled=true", "--set", "super.users=User:admin"])
    tls = {"ssl.ca.location": str(ca)}
    sasl = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin", "sasl.password": "admin-secret"}
    results: dict[str, tuple[float, float]] = {}
    try:
        a.start()
        b.start()
        results["PLAINTEXT"] = measure("PLAINTEXT", a.bootstrap("PLAINTEXT"), {}, args.size_mb)
        admin_b = {"security.protocol": "SASL_PLAINTEXT", **sasl}
        client = AdminClient({"bootstrap.servers": b.bootstrap("SASL_PLAINTEXT"), **admin_b})
        acls = [AclBinding(rt, name, ResourcePatternType.PREFIXED, "User:ANONYMOUS", "*", AclOperation.ALL,
                           AclPermissionType.ALLOW)
                for rt, name in ((ResourceType.TOPIC, "bench-"), (ResourceType.GROUP, "bench"))]
        for future in client.create_acls(acls).values():
            future.result(30)
        results["PLAINTEXT + authorizer (ACLs)"] = measure(
            "PLAINTEXT + authorizer (ACLs)", b.bootstrap("PLAINTEXT"), {}, args.size_mb,
            admin={"bootstrap.servers": b.bootstrap("SASL_PLAINTEXT"), **admin_b})
        results["SSL"] = measure("SSL", a.bootstrap("SSL"), {"security.protocol": "SSL", **tls}, args.size_mb)
        results["SASL_SSL (SCRAM-SHA-512)"] = measure(
            "SASL_SSL (SCRAM-SHA-512)", a.bootstrap("SASL_SSL"), {"security.protocol": "SASL_SSL", **tls, **sasl},
            args.size_mb)
    finally:
        for broker in (a, b):
            if broker.alive():
                broker.stop()
    base_p, base_f = results["PLAINTEXT"]
    print("ratios to PLAINTEXT (same run):")
    for name, (p, f) in results.items():
        print(f"  {name:<32} produce {p / base_p:5.2f}x   fetch {f / base_f:5.2f}x")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
