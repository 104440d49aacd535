#!/bin/sh
# System packages the emulated testbed (tensorwire.testbed) needs: ip and tc from
# iproute2, chrt from util-linux. Idempotent and quiet: does nothing when they are present;
# installs what is missing when run as root on a Debian/Ubuntu system; otherwise says what
# is missing on one line and exits 0 (the testbed tests then skip, giving the reason).
set -eu

missing=""
command -v ip >/dev/null 2>&1 || missing="$missing iproute2"
command -v tc >/dev/null 2>&1 || case "$missing" in *iproute2*) ;; *) missing="$missing iproute2" ;; esac
command -v chrt >/dev/null 2>&1 || missing="$missing util-linux"
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-system: missing$missing (install as root; the testbed tests will skip)" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
