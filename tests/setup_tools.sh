#!/usr/bin/env bash
# Installs the non-Python test peers when they are missing: kcat and prometheus
# (Debian packages) and kafkajs (npm, into tests/node).  Failure is tolerated:
# the tests that need a missing tool skip and say why.
set -u
cd "$(dirname "$0")/.."
need_apt=()
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
if [ ${#need_apt[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "installing ${need_apt[*]} (apt)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}") \
    >/tmp/kbroker-apt.log 2>&1 || echo "apt install of ${need_apt[*]} failed (see /tmp/kbroker-apt.log); dependent tests will skip"
fi
if command -v npm >/dev/null 2>&1 && [ ! -d tests/node/node_modules/kafkajs ]; then
  echo "installing kafkajs (npm)"
  (cd tests/node && npm install --silent --no-audit --no-fund >/tmp/kbroker-npm.log 2>&1) \
    || echo "npm install failed (see /tmp/kbroker-npm.log); kafkajs tests will skip"
fi
exit 0
