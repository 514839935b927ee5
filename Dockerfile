# kbroker: a Kafka-protocol broker in Python.
#   docker build -t kbroker .
#   docker run -p 9092:9092 -p 9464:9464 -v kbroker-data:/data kbroker
#   docker build --target spark -t kbroker-spark .     # the Spark jobs' image (Java and PySpark added)
#
# Stages: "build" has a C compiler and turns the project and its dependencies into wheels, the
# compiled record codec (protocol/_crecords.pyx) and the request path's modules (protocol/compiled.py),
# built with Cython, included; the runtime stage (the last one, the default target) installs those
# wheels and nothing else — no compiler, no build tools — and the build fails there if any compiled
# part is not in use. "spark" adds Java and PySpark to the same wheels for the jobs of spark_jobs/
# (only built when asked for with --target spark).
# The pip cache is a build cache mount: rebuilding after a source change downloads nothing again.

FROM python:3.11-slim AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# the build requirements and the dependencies first (and the list of the Spark extra's, for the spark
# stage): these layers only change with pyproject.toml
COPY pyproject.toml ./
RUN mkdir /requires && python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb')); \
open('/requires/build.txt', 'w').write('\n'.join(p['build-system']['requires'])); \
open('/requires/runtime.txt', 'w').write('\n'.join(p['project']['dependencies'])); \
open('/requires/spark.txt', 'w').write('\n'.join(p['project']['optional-dependencies']['spark']))"
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install -r /requires/build.txt \
    && pip wheel --wheel-dir /wheels -r /requires/runtime.txt
COPY setup.py README.md ./
COPY protocol ./protocol
COPY broker ./broker
COPY client ./client
COPY kbroker_cli ./kbroker_cli
COPY spark_jobs ./spark_jobs
RUN pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
    && cd /wheels && sha256sum *.whl > SHA256SUMS

FROM python:3.11-slim AS spark
# the slim image leaves out /usr/share/man, where the JRE's post-install script links java.1.gz
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /requires/spark.txt /tmp/spark-requires.txt
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install -r /tmp/spark-requires.txt
COPY --from=build /wheels/SHA256SUMS /usr/local/share/kbroker/wheels.sha256
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links /wheels "kbroker[spark]" \
    && python -c "import sys, protocol.records as r; sys.exit(0 if r.COMPILED else 'the compiled record codec is missing')"
WORKDIR /app
CMD ["python", "-m", "spark_jobs.export_parquet", "--help"]

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    KBROKER_HOST=0.0.0.0 \
    KBROKER_PORT=9092 \
    KBROKER_DATA_DIR=/data \
    KBROKER_METRICS_PORT=9464 \
    KBROKER_METRICS_HOST=0.0.0.0 \
    KBROKER_CONSOLE_LISTENER=http://0.0.0.0:9080

RUN groupadd --system kbroker && useradd --system --gid kbroker --home-dir /app --shell /usr/sbin/nologin kbroker

WORKDIR /app
# which wheels the image holds; copying it also reruns the install whenever they change (some
# builders leave what a RUN bind-mounts from another stage out of their cache key)
COPY --from=build /wheels/SHA256SUMS /usr/local/share/kbroker/wheels.sha256
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links /wheels kbroker \
    && python -c "import sys, protocol.records as r; sys.exit(0 if r.COMPILED else 'the compiled record codec is missing')" \
    && python -c "import sys, protocol.compiled as c; m = c.missing(); sys.exit(f'not compiled: {m}' if m else 0)" \
    && mkdir -p /data && chown kbroker:kbroker /data

USER kbroker
VOLUME ["/data"]
EXPOSE 9092 9464 9080

HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD python -c "import os, socket; socket.create_connection(('127.0.0.1', int(os.environ.get('KBROKER_PORT', '9092'))), 2).close()"

ENTRYPOINT ["python", "-m", "broker"]
