#!/usr/bin/env bash
# Installs the non-Python test peers when they are missing: kcat, prometheus, etcd and openssl
# (Debian packages kcat, prometheus, etcd-server, openssl), node and npm (Debian nodejs, npm),
# kafkajs (npm, into tests/node), what the container tests (tests/container) build and run
# images with: podman with runc, fuse-overlayfs and uidmap, mmdebstrap and docker-compose, and
# Chromium with its WebDriver for the console's browser tests (Debian chromium, chromium-driver).
#
# Outside CI a peer that cannot be installed is reported and the tests that need it skip, saying
# why.  In CI (CI=true) every peer is required: this script exits non-zero when one is still
# missing, and the tests that need it fail instead of skipping (the rule lives in tests/peers.py).
set -u
cd "$(dirname "$0")/.."
case "${CI:-}" in
  [Tt][Rr][Uu][Ee] | 1 | [Yy][Ee][Ss]) strict=1 ;;
  *) strict=0 ;;
esac

need_apt=()
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
if ! command -v npm >/dev/null 2>&1 && [ ! -d tests/node/node_modules/kafkajs ]; then
  need_apt+=(npm)
fi
command -v podman >/dev/null 2>&1 || need_apt+=(podman fuse-overlayfs uidmap)
command -v runc >/dev/null 2>&1 || need_apt+=(runc)
command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
command -v docker-compose >/dev/null 2>&1 || need_apt+=(docker-compose)
if [ ${#need_apt[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing ${need_apt[*]} (apt)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}") \
      >/tmp/kbroker-apt.log 2>&1 || echo "apt install of ${need_apt[*]} failed (see /tmp/kbroker-apt.log)"
  else
    echo "cannot install ${need_apt[*]}: that needs apt-get, run as root"
  fi
fi
if [ ! -d tests/node/node_modules/kafkajs ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "installing kafkajs (npm)"
    (cd tests/node && npm install --silent --no-audit --no-fund >/tmp/kbroker-npm.log 2>&1) \
      || echo "npm install failed (see /tmp/kbroker-npm.log)"
  else
    echo "cannot install kafkajs: npm is missing"
  fi
fi

missing=()
for tool in kcat prometheus etcd node openssl podman runc mmdebstrap docker-compose chromium chromedriver; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ -d tests/node/node_modules/kafkajs ] || missing+=(kafkajs)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$strict" = 1 ]; then
    echo "test peers missing in CI (CI=true): ${missing[*]}" >&2
    exit 1
  fi
  echo "test peers missing: ${missing[*]}; the tests that need them will skip"
fi
exit 0
