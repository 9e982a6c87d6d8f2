#!/bin/sh
# A task's life ends with its chief's, with real processes on loopback:
#  1. a chief that finishes tells its ps and worker, and they exit 0;
#  2. a chief killed with SIGKILL: its ps and worker, which kept serving
#     while it lived although it ran longer than their chief timeout,
#     exit by themselves within that timeout after it is gone, with the
#     non-zero status 138 (a restart policy restarts them);
#  3. a malformed --chief-timeout is an error that names it;
#  4. a chief stopped by SIGTERM mid-training, then one that fails: the ps
#     and worker keep serving, and the next incarnation resumes from the
#     first one's backup (BackupAndRestore), finishes, and ends them with 0;
#  5. SIGTERM ends a ps at once, with status 143 (not a success);
#  6. a chief that is process 1 of its PID namespace (a container without
#     an init) still ends on SIGTERM, with status 143.
# usage: test_lifecycle.sh COUNTER LINEAR_REGRESSION EMBEDDING_CLASSIFIER
set -u
counter=$1 linreg=$2 classifier=$3
. "$(dirname "$0")/harness.sh" # $tmp, $pids, ok / fail, ports

tf_config() { # TYPE INDEX PS WORKER CHIEF
	printf '{"cluster": {"ps": ["127.0.0.1:%s"], "worker": ["127.0.0.1:%s"], "chief": ["127.0.0.1:%s"]}, "task": {"type": "%s", "index": %s}}' \
		"$3" "$4" "$5" "$1" "$2"
}
# waits up to $2 tenths of a second for pid $1 to end; its status in $st
wait_exit() {
	i=0
	while kill -0 "$1" 2> /dev/null; do
		if [ "$(ps -o stat= -p "$1" | cut -c1)" = Z ]; then break; fi
		i=$((i + 1))
		[ "$i" -le "$2" ] || return 1
		sleep 0.1
	done
	wait "$1"
	st=$?
	return 0
}

# 1: a chief that finishes
set -- $(ports 3)
PASCO_LOG=2 TF_CONFIG=$(tf_config ps 0 "$1" "$2" "$3") "$counter" 2> "$tmp/ps.log" &
ps_pid=$!
PASCO_LOG=2 TF_CONFIG=$(tf_config worker 0 "$1" "$2" "$3") "$counter" 2> "$tmp/w.log" &
w_pid=$!
pids="$ps_pid $w_pid"
if TF_CONFIG=$(tf_config chief 0 "$1" "$2" "$3") timeout 60 "$counter" > "$tmp/chief.out" 2>&1 &&
	grep -q 'counter = 100' "$tmp/chief.out"; then
	ok "the chief ran its program"
else
	fail "the chief failed: $(cat "$tmp/chief.out")"
fi
for t in "ps:$ps_pid:$tmp/ps.log" "worker:$w_pid:$tmp/w.log"; do
	name=${t%%:*} rest=${t#*:}
	pid=${rest%%:*} log=${rest#*:}
	if wait_exit "$pid" 50 && [ "$st" -eq 0 ] &&
		grep -q 'the chief is done; exiting' "$log"; then
		ok "$name exits 0 when the chief is done"
	else
		fail "$name did not exit when the chief finished: $(tail -3 "$log")"
	fi
done

# 2: a chief killed while training; ps and worker time out after it
set -- $(ports 3)
export PASCO_CHIEF_TIMEOUT=2
PASCO_LOG=2 TF_CONFIG=$(tf_config ps 0 "$1" "$2" "$3") "$linreg" 2> "$tmp/ps.log" &
ps_pid=$!
PASCO_LOG=2 TF_CONFIG=$(tf_config worker 0 "$1" "$2" "$3") "$linreg" 2> "$tmp/w.log" &
w_pid=$!
TF_CONFIG=$(tf_config chief 0 "$1" "$2" "$3") "$linreg" --epochs 100000 > "$tmp/chief.out" 2>&1 &
c_pid=$!
pids="$ps_pid $w_pid $c_pid"
unset PASCO_CHIEF_TIMEOUT
i=0 # the chief trains for 4 s: twice the timeout
while [ "$i" -lt 40 ] && kill -0 "$c_pid" 2> /dev/null; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$ps_pid" 2> /dev/null && kill -0 "$w_pid" 2> /dev/null &&
	grep -q 'epoch' "$tmp/chief.out"; then
	ok "ps and worker serve a live chief past their timeout"
else
	fail "a task ended under a live chief: $(tail -3 "$tmp/ps.log" "$tmp/w.log" "$tmp/chief.out")"
fi
kill -9 "$c_pid"
wait "$c_pid" 2> /dev/null
for t in "ps:$ps_pid:$tmp/ps.log" "worker:$w_pid:$tmp/w.log"; do
	name=${t%%:*} rest=${t#*:}
	pid=${rest%%:*} log=${rest#*:}
	if wait_exit "$pid" 80 && [ "$st" -eq 138 ] &&
		grep -q 'the chief is gone; exiting with status 138' "$log"; then
		ok "$name exits by itself 2 s after its chief was killed, status 138"
	else
		fail "$name outlived its chief or exited 0 (status ${st:-none}): $(tail -3 "$log")"
	fi
done

# 3: a malformed timeout
out=$(TF_CONFIG=$(tf_config ps 0 1 2 3) "$counter" --chief-timeout soon 2>&1)
st=$?
if [ "$st" -eq 2 ] && echo "$out" | grep -q "chief timeout 'soon'"; then
	ok "a malformed --chief-timeout is named"
else
	fail "--chief-timeout soon: status $st, $out"
fi
# 4: a chief stopped by SIGTERM, one that fails, one that resumes
set -- $(ports 3)
mkdir "$tmp/ck"
export PASCO_CHECKPOINT_DIR=$tmp PASCO_CHIEF_TIMEOUT=60
PASCO_LOG=2 TF_CONFIG=$(tf_config ps 0 "$1" "$2" "$3") "$classifier" 2> "$tmp/ps4.log" &
ps_pid=$!
PASCO_LOG=2 TF_CONFIG=$(tf_config worker 0 "$1" "$2" "$3") "$classifier" 2> "$tmp/w4.log" &
w_pid=$!
unset PASCO_CHECKPOINT_DIR PASCO_CHIEF_TIMEOUT
fit() { # the chief's incarnation; its output in $tmp/$1.out. With
	# FIT_EXEC set (in a background subshell), the subshell becomes the
	# chief, so $! is the chief itself: a signal to it reaches the chief
	out=$1
	shift
	${FIT_EXEC:+exec} env PASCO_LINE_BUFFERED=1 TF_CONFIG="$(tf_config chief 0 "$p_ps" "$p_w" "$p_c")" \
		"$classifier" --steps 100 --checkpoint-dir "$tmp/ck" "$@" > "$tmp/$out.out" 2>&1
}
p_ps=$1 p_w=$2 p_c=$3
FIT_EXEC=1 fit first --epochs 1000 &
c_pid=$!
pids="$ps_pid $w_pid $c_pid"
i=0 # until the backup holds epoch 3 (60 s at most)
while [ "$i" -lt 600 ] && ! grep -q '^Epoch 4/1000' "$tmp/first.out" 2> /dev/null; do
	sleep 0.1
	i=$((i + 1))
done
kill -TERM "$c_pid"
st=none
if wait_exit "$c_pid" 50 && [ "$st" -eq 143 ]; then
	ok "SIGTERM ends a training chief at once (status 143)"
else
	fail "the chief did not end on SIGTERM (status ${st:-none}): $(tail -3 "$tmp/first.out")"
fi
fit failed --epochs 0
st=$?
# a chief that told them it is done did so before it exited: they would
# be gone within the second their serving loop takes to look
i=0
while [ "$i" -lt 30 ] && kill -0 "$ps_pid" 2> /dev/null && kill -0 "$w_pid" 2> /dev/null; do
	sleep 0.1
	i=$((i + 1))
done
if [ "$st" -eq 2 ] && kill -0 "$ps_pid" 2> /dev/null && kill -0 "$w_pid" 2> /dev/null &&
	! grep -q 'the chief is done' "$tmp/ps4.log" "$tmp/w4.log"; then
	ok "after a chief that failed (status $st), ps and worker still serve"
else
	fail "a failed chief (status $st) ended its servers: $(tail -2 "$tmp/ps4.log" "$tmp/w4.log")"
fi
# the epochs the first one finished; the next resumes after them
done_epochs=$(sed -n 's|^Epoch \([0-9]*\)/1000: [0-9]*/100 steps in.*|\1|p' "$tmp/first.out" | tail -n 1)
fit second --epochs $((done_epochs + 2))
st=$?
start=$(sed -n 's|^Starting at epoch \([0-9]*\)/.*|\1|p' "$tmp/second.out")
if [ "$st" -eq 0 ] && [ "${start:-0}" -ge 4 ] && [ "$start" -le $((done_epochs + 1)) ] &&
	grep -q '^accuracy = ' "$tmp/second.out"; then
	ok "the chief's next incarnation resumed at epoch $start (after $done_epochs) on the same servers"
else
	fail "the next incarnation: $(tail -5 "$tmp/second.out")"
fi
for t in "ps:$ps_pid:$tmp/ps4.log" "worker:$w_pid:$tmp/w4.log"; do
	name=${t%%:*} rest=${t#*:}
	pid=${rest%%:*} log=${rest#*:}
	if wait_exit "$pid" 50 && [ "$st" -eq 0 ] &&
		grep -q 'the chief is done; exiting' "$log"; then
		ok "$name exits 0 when the resumed chief is done"
	else
		fail "$name after the resumed chief: status ${st:-none}: $(tail -3 "$log")"
	fi
done

# 5: SIGTERM to a ps
set -- $(ports 3)
PASCO_LOG=2 TF_CONFIG=$(tf_config ps 0 "$1" "$2" "$3") "$counter" 2> "$tmp/term.log" &
ps_pid=$!
pids=$ps_pid
i=0
while [ "$i" -lt 100 ] && ! grep -q 'serving at' "$tmp/term.log" 2> /dev/null; do
	sleep 0.1
	i=$((i + 1))
done
kill -TERM "$ps_pid"
st=none
if wait_exit "$ps_pid" 30 && [ "$st" -eq 143 ] &&
	grep -q 'stopping on signal 15 (exit status 143)' "$tmp/term.log"; then
	ok "SIGTERM ends a ps at once, status 143"
else
	fail "SIGTERM to a ps: status $st: $(tail -2 "$tmp/term.log")"
fi

# 6: a chief as process 1 (of a new PID namespace, as in a container)
if unshare --user --map-root-user --pid --fork true 2> /dev/null; then
	set -- $(ports 3)
	# its ps never comes: it waits to connect until SIGTERM
	PASCO_CONNECT_TIMEOUT=60 TF_CONFIG=$(tf_config chief 0 "$1" "$2" "$3") \
		unshare --user --map-root-user --pid --fork "$linreg" > "$tmp/init.out" 2>&1 &
	u_pid=$!
	pids=$u_pid
	i=0
	while [ "$i" -lt 100 ] && ! grep -q 'waiting for' "$tmp/init.out" 2> /dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	init=$(ps -o pid= --ppid "$u_pid" | tr -d ' ')
	pids="$u_pid $init"
	[ -n "$init" ] && kill -TERM "$init"
	st=none
	if [ -n "$init" ] && wait_exit "$u_pid" 50 && [ "$st" -eq 143 ]; then
		ok "a chief that is process 1 ends on SIGTERM, status 143"
	else
		fail "a chief as process 1 ignored SIGTERM (status ${st:-none}): $(tail -2 "$tmp/init.out")"
	fi
else
	echo "skip: no PID namespace for a chief as process 1 (unshare --user --pid failed)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
