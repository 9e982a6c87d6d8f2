#!/bin/sh
# Installs what Pasco needs to build and test, from Debian 12 packages.
# A no-op when everything is already there.
set -eu
pkgs="build-essential meson ninja-build pkg-config cmake protobuf-c-compiler
libprotobuf-c-dev libnng-dev liburing-dev libcriterion-dev libcjson-dev
libopenblas-dev python3"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "setup: installing$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
