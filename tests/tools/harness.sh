# Shared by the shell suites that start real processes (sourced, not run):
# a temporary directory $tmp, the processes in $pids killed and $tmp
# removed at exit, ok / fail counting into $passed / $failed, and free
# loopback ports.
tmp=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2> /dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }

ports() { # N free loopback ports
	python3 -c 'import socket,sys
s=[socket.socket() for _ in range(int(sys.argv[1]))]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))' "$1"
}
