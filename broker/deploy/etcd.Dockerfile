# etcd from Debian's etcd-server package, for `docker compose --profile cluster up`.
FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server wget \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/etcd
EXPOSE 2379
CMD ["etcd", "--data-dir", "/var/lib/etcd/data", "--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://127.0.0.1:2379"]
