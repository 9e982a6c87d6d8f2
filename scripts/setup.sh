#!/bin/sh
# Installs what the README's two commands (scripts/example, scripts/test)
# need to build and test Pasco, from Debian 12 packages, and says what it
# installs; with npm present, also the npm package of one cross-check test
# (skipped without it). A no-op when everything is already there.
# libgfortran-12-dev: OpenBLAS's pkg-config file names -lgfortran for a
# static link (`pkg-config --static --libs pasco`, docs/guide.md's static
# build and the `install` test). python3-numpy: the model tests' independent
# references (Normalization against numpy). python3-mesonpy and python3-venv:
# the pip wheel's test (tests/tools/test_wheel.sh) builds the wheel offline
# with meson-python and installs it into a fresh venv (docs/install.md).
# python3-torch, for the benchmarks'
# PyTorch peer, is not installed here: `bench/run --peers` installs it
# when it runs. The `slurm` and `hosts` suites install what they need
# themselves (docs/contributing.md, "Tests").
set -eu
pkgs="build-essential meson ninja-build pkg-config cmake protobuf-c-compiler
libprotobuf-c-dev libnng-dev liburing-dev libcriterion-dev libcjson-dev
libopenblas-dev libgfortran-12-dev zlib1g-dev python3 python3-numpy
python3-mesonpy python3-venv python3-sklearn"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing the Debian packages Pasco builds and tests with:$missing"
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo > /dev/null 2>&1; then
			echo "setup: installing packages needs root, and sudo is not installed;" \
				"as root, run:" >&2
			echo "  apt-get update && apt-get install -y --no-install-recommends$missing" >&2
			echo "then run this again." >&2
			exit 1
		fi
		SUDO=sudo
	fi
	log=$(mktemp)
	# shellcheck disable=SC2086
	if ! { $SUDO apt-get update -qq &&
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $missing; } > "$log" 2>&1; then
		tail -20 "$log" >&2
		rm -f "$log"
		echo "setup: apt-get could not install:$missing (its last lines above)" >&2
		exit 1
	fi
	rm -f "$log"
fi
# Optional: the independent TFRecord implementation the cross-check test
# uses (tests/kit/test_tfrecord_npm.sh skips without it), when npm is there.
cd "$(dirname "$0")/.."
if command -v npm > /dev/null 2>&1 && [ ! -d .deps/node/node_modules/@roboflow/tfrecords ]; then
	mkdir -p .deps/node
	echo "setup: installing @roboflow/tfrecords (npm, into .deps/node) for the TFRecord cross-check test"
	timeout 300 npm install --prefix .deps/node --no-audit --no-fund --silent @roboflow/tfrecords ||
		echo "setup: @roboflow/tfrecords not installed; its cross-check will be skipped"
fi
