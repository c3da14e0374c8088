#!/usr/bin/env bash
# Install Debian's Chromium for the report's browser test (tests/test_tokens_pass.py), if it is missing.
# Needs root and apt (CI runs as root); elsewhere the test skips with a message instead.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: not root or no apt-get; the report's browser test will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q chromium
chromium --version
