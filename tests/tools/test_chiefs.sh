#!/bin/sh
# One chief per cluster, with real processes on loopback (the
# linear_regression example, whose steps read a per-worker iterator):
#  1. while chief A trains, chief B (another address, the same ps and
#     worker) is refused, naming A; B exits non-zero, its farewell does not
#     end the tasks, and A trains on;
#  2. A killed with SIGKILL and started again at its address (a new
#     process, a new incarnation) is served and trains to its end;
#  3. a chief stopped (SIGSTOP) and replaced by a new one at its address,
#     which trains to its end (its tasks then exit), then continued: it
#     fails saying it cannot read w, and prints no "w = nan".
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
# 3: a chief replaced while it was stopped
set -- $(ports 3)
ps_port=$1 w_port=$2 c_port=$3
TF_CONFIG=$(tf_config ps "$ps_port" "$w_port" "$c_port") "$linreg" 2> "$tmp/ps3.log" &
ps_pid=$!
TF_CONFIG=$(tf_config worker "$ps_port" "$w_port" "$c_port") "$linreg" 2> "$tmp/w3.log" &
w_pid=$!
TF_CONFIG=$(tf_config chief "$ps_port" "$w_port" "$c_port") "$linreg" --epochs 100000 --steps 20 > "$tmp/c.out" 2>&1 &
c_pid=$!
pids="$pids $ps_pid $w_pid $c_pid"
wait_epochs "$tmp/c.out" 1 300 || fail "chief C did not train: $(tail -5 "$tmp/c.out")"
kill -STOP "$c_pid"
# (as many steps as A2 above: the example fails unless w and b converge)
TF_CONFIG=$(tf_config chief "$ps_port" "$w_port" "$c_port") timeout 90 "$linreg" --epochs 10 --steps 100 > "$tmp/c2.out" 2>&1 ||
	fail "chief C2: $(tail -5 "$tmp/c2.out")"
wait "$ps_pid" "$w_pid" # C2 succeeded: its tasks end
kill -CONT "$c_pid"
i=0
while kill -0 "$c_pid" 2> /dev/null && [ "$i" -le 600 ]; do
	i=$((i + 1))
	sleep 0.1
done
wait "$c_pid" 2> /dev/null
st=$?
if [ "$st" -ne 0 ] && grep -q "^cannot read the trained values: " "$tmp/c.out" &&
	! grep -qi "= nan" "$tmp/c.out"; then
	ok "chief C, replaced while stopped, says it cannot read w (no NaN)"
else
	fail "the replaced chief C: status $st, $(grep -v '^epoch' "$tmp/c.out" | tail -5)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
