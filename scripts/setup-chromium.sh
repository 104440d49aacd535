#!/bin/sh
# Headless Chromium for the report's browser test (tests/unit/report/test_chromium.py):
# Debian's `chromium` package. Idempotent and quiet: does nothing when a Chromium is on PATH;
# installs it when run as root on a Debian/Ubuntu system with apt-get; otherwise says on one
# line why it cannot, and exits 0 (the browser test then skips, giving the reason).
set -eu

for name in chromium chromium-browser google-chrome; do
    command -v "$name" >/dev/null 2>&1 && exit 0
done

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-chromium: no chromium on PATH and cannot install it here (needs root and apt-get); the browser test will skip" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; then
    echo "setup-chromium: apt-get could not install chromium; the browser test will skip" >&2
fi
exit 0
