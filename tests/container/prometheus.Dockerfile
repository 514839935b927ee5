# A stand-in for prom/prometheus (no image registry here): Debian's prometheus package, run the way the
# official image runs it (entrypoint prometheus, not root), so docker-compose.yml's prometheus service
# runs unchanged. Debian's build keeps its data in /var/lib/prometheus, owned by the package's user.
FROM debian:bookworm-slim
LABEL org.kbroker.test-standin=prometheus
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /var/lib/prometheus
USER prometheus
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml"]
