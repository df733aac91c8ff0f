#!/bin/sh
# System packages the tests need; installed only when missing and only as root (as CI runs).
set -eu
missing=""
for pkg in $(cat "$(dirname "$0")/system-packages.txt" 2>/dev/null | grep -v '^#' || true); do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing system packages:$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "missing system packages:$missing (run as root or install them)" >&2
fi
