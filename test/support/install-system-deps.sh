#!/usr/bin/env bash
# Installs the Debian packages the tests run for real (not mocked): Prometheus as the remote-write
# receiver, Chromium for the dashboard's browser test (driven by playwright-core), jq for docs/demo.md's
# "Why is P99 slow?" walk-through (run as written by test/demo/scenarios.test.ts). Idempotent: does
# nothing when everything is present.
set -euo pipefail
need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v jq >/dev/null 2>&1 || need+=(jq)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The package's service is not started here: the tests run their own instance on 127.0.0.1.
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
