# kbroker: a Kafka-protocol broker in Python.
#   docker build -t kbroker .
#   docker run -p 9092:9092 -p 9464:9464 -v kbroker-data:/data kbroker
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    KBROKER_HOST=0.0.0.0 \
    KBROKER_PORT=9092 \
    KBROKER_DATA_DIR=/data \
    KBROKER_METRICS_PORT=9464 \
    KBROKER_METRICS_HOST=0.0.0.0

RUN groupadd --system kbroker && useradd --system --gid kbroker --home-dir /app --shell /usr/sbin/nologin kbroker

WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY broker ./broker
COPY client ./client
COPY kbroker_cli ./kbroker_cli
COPY spark_jobs ./spark_jobs
RUN pip install --no-cache-dir . \
    && mkdir -p /data && chown kbroker:kbroker /data

USER kbroker
VOLUME ["/data"]
EXPOSE 9092 9464

HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD python -c "import os, socket; socket.create_connection(('127.0.0.1', int(os.environ.get('KBROKER_PORT', '9092'))), 2).close()"

ENTRYPOINT ["python", "-m", "broker"]
