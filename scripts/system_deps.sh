#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, only when they are absent.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then need+=(postgresql); fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "system_deps: need ${need[*]} but not root; install them with apt-get" >&2
  exit 1
fi
echo "system_deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
