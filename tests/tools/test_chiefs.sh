#!/bin/sh
# One chief per cluster, with real processes on loopback (the
# linear_regression example, whose steps read a per-worker iterator):
#  1. while chief A trains, chief B (another address, the same ps and
#     worker) is refused, naming A; B exits non-zero, its farewell does not
#     end the tasks, and A trains on;
#  2. A killed with SIGKILL and started again at its address (a new
#     process, a new incarnation) is served and trains to its end.
# usage: test_chiefs.sh LINEAR_REGRESSION
set -u
linreg=$1
. "$(dirname "$0")/harness.sh" # $tmp, $pids, ok / fail, ports

tf_config() { # TYPE PS WORKER CHIEF
	printf '{"cluster": {"ps": ["127.0.0.1:%s"], "worker": ["127.0.0.1:%s"], "chief": ["127.0.0.1:%s"]}, "task": {"type": "%s", "index": 0}}' \
		"$2" "$3" "$4" "$1"
}
epochs() { # epochs finished in file $1 (0 while it does not exist)
	n=$(grep -c '^epoch' "$1" 2> /dev/null)
	echo "${n:-0}"
}
# waits up to $3 tenths of a second until file $1 has more than $2 epochs
wait_epochs() {
	i=0
	while [ "$(epochs "$1")" -le "$2" ]; do
		i=$((i + 1))
		[ "$i" -le "$3" ] || return 1
		sleep 0.1
	done
}

set -- $(ports 4)
ps_port=$1 w_port=$2 a_port=$3 b_port=$4
TF_CONFIG=$(tf_config ps "$ps_port" "$w_port" "$a_port") "$linreg" 2> "$tmp/ps.log" &
ps_pid=$!
TF_CONFIG=$(tf_config worker "$ps_port" "$w_port" "$a_port") "$linreg" 2> "$tmp/w.log" &
w_pid=$!
TF_CONFIG=$(tf_config chief "$ps_port" "$w_port" "$a_port") "$linreg" --epochs 100000 --steps 20 > "$tmp/a.out" 2>&1 &
a_pid=$!
pids="$ps_pid $w_pid $a_pid"

# 1: a second chief
if wait_epochs "$tmp/a.out" 1 300; then
	ok "chief A trains"
else
	fail "chief A did not train: $(tail -5 "$tmp/a.out")"
fi
TF_CONFIG=$(tf_config chief "$ps_port" "$w_port" "$b_port") timeout 60 "$linreg" --epochs 5 > "$tmp/b.out" 2>&1
st=$?
if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] &&
	grep -q "refused chief tcp://127.0.0.1:$b_port: it already serves chief tcp://127.0.0.1:$a_port" "$tmp/b.out"; then
	ok "chief B is refused, naming chief A"
else
	fail "chief B: status $st, $(tail -5 "$tmp/b.out")"
fi
n=$(epochs "$tmp/a.out")
if wait_epochs "$tmp/a.out" $((n + 2)) 300 && kill -0 "$a_pid" 2> /dev/null &&
	kill -0 "$ps_pid" 2> /dev/null && kill -0 "$w_pid" 2> /dev/null; then
	ok "chief A trains on after B (its iterator and its tasks unharmed)"
else
	fail "chief A after B: $(tail -5 "$tmp/a.out" "$tmp/ps.log" "$tmp/w.log")"
fi

# 2: the same chief, restarted
kill -9 "$a_pid"
wait "$a_pid" 2> /dev/null
# enough steps to converge whatever A had done (the example fails when w
# and b are not within 0.01 of the truth; a slow, sanitized A does little)
if TF_CONFIG=$(tf_config chief "$ps_port" "$w_port" "$a_port") timeout 90 "$linreg" --epochs 10 --steps 100 > "$tmp/a2.out" 2>&1 &&
	grep -q '^epoch 10' "$tmp/a2.out"; then
	ok "chief A restarted at its address is served and trains to its end"
else
	fail "the restarted chief A: $(tail -5 "$tmp/a2.out")"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
