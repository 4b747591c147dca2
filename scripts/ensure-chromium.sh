#!/usr/bin/env bash
# Makes sure a headless Chromium exists for the portal's browser tests (services/portal/test/browser,
# e2e/test/portal*.test.ts). The tests drive Debian's `chromium` package through playwright-core with
# `executablePath`: playwright's own browser download needs hosts these machines cannot reach, Debian's mirror
# is reachable. Set CHROMIUM_PATH to use another Chromium build.
set -euo pipefail
path="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$path" ]; then
  exit 0
fi
if [ -n "${CHROMIUM_PATH:-}" ]; then
  echo "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file." >&2
  exit 1
fi
if [ "$(id -u)" != "0" ]; then
  echo "Chromium is missing (/usr/bin/chromium) and this is not root, so it cannot be installed here." >&2
  echo "Install it with: sudo apt-get install -y chromium   (or set CHROMIUM_PATH to a Chromium binary)." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is missing and apt-get is not available: install Chromium and set CHROMIUM_PATH." >&2
  exit 1
fi
echo "Installing Debian's chromium package for the browser tests..."
export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing or stale on a fresh machine; a failed install retries after an update.
if ! apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; then
  apt-get update -q >/dev/null
  apt-get install -y --no-install-recommends chromium >/dev/null
fi
"$path" --version
