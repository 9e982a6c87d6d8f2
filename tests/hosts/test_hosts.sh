#!/bin/sh
# Real clusters across hosts of their own: one network namespace per task
# (ps0, ps1, w0, w1, chief), each with one address on a /24 picked at
# random in 10.0.0.0/8, joined by veth pairs to a Linux bridge in a hub
# namespace. Tasks are named (ps0.pasco.test, ...) in a hosts file per
# namespace (/etc/netns/NS/hosts, which `ip netns exec` mounts over
# /etc/hosts) and TF_CONFIG uses the names. Scenarios:
#  1. linear_regression converges across the hosts;
#  2. embedding_classifier (the tutorial's model) converges, its workers
#     reading ps0's bulk port and the chief sending closures to w0's;
#  3. with 5 ms of delay and 200 mbit/s on every task's link (netem), the
#     regression still converges; steps/s at 0 and 5 ms are printed (where
#     the kernel has no netem, 200 mbit/s alone, with tbf);
#  4. a worker's link goes down for a few seconds during a run: the chief
#     fails that worker, retries its closures elsewhere, takes it back
#     when the link returns, and the run converges;
#  5. the link between one worker and one ps is cut (iptables in the
#     worker's namespace) while the chief reaches both: the chief names
#     the worker's link, benches that worker, training goes on on the
#     other worker, and the run converges once the link is back.
# After each run every task has ended, and nothing listened or connected
# in the root namespace. Every wait is bounded; every process started is
# killed and every namespace removed on exit.
# Skips (77) when not root or when namespaces cannot be made; scenario 3
# limits the bandwidth only when netem is missing, and is skipped when tbf
# is missing too.
# usage: test_hosts.sh LINEAR_REGRESSION EMBEDDING_CLASSIFIER
set -u
LINREG=$1
CLASSIFIER=$2
PORT=2222
P="pasco-$$"
HUB="$P-hub"
TASKS="ps0 ps1 w0 w1 chief"
MARK="pasco-hosts-$$"
TMP=$(mktemp -d)
made_ns=""
pids=""
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }
skip() { echo "SKIP: $1"; exit 77; }

# pids of processes carrying our marker
marked() {
	for e in /proc/[0-9]*/environ; do
		if { tr '\0' '\n' < "$e"; } 2> /dev/null | grep -qx "PASCO_TEST_MARK=$MARK"; then
			p=${e#/proc/}
			echo "${p%/environ}"
		fi
	done
}

cleanup() {
	for p in $pids $(marked); do kill -9 "$p" 2> /dev/null; done
	for ns in $made_ns; do
		for p in $(ip netns pids "$ns" 2> /dev/null); do kill -9 "$p" 2> /dev/null; done
		ip netns del "$ns" 2> /dev/null
		rm -rf "/etc/netns/$ns"
	done
	# what ip netns made for the first namespace of this machine, when no
	# other is left
	[ -n "$had_etc_netns" ] || rmdir /etc/netns 2> /dev/null
	if [ -z "$had_run_netns" ] && [ -z "$(ls -A /run/netns 2> /dev/null)" ]; then
		umount /run/netns 2> /dev/null
		rmdir /run/netns 2> /dev/null
	fi
	rm -rf "$TMP"
}
had_etc_netns=$([ -d /etc/netns ] && echo 1)
had_run_netns=$([ -d /run/netns ] && echo 1)
trap cleanup EXIT
trap 'exit 130' INT TERM

# waits up to $2 tenths of a second for command $1 to succeed
wait_for() {
	i=0
	while [ "$i" -lt "$2" ]; do
		if eval "$1"; then return 0; fi
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# waits up to $2 tenths of a second for pid $1 to end; its status in $st
wait_exit() {
	i=0
	while kill -0 "$1" 2> /dev/null; do
		if [ "$(ps -o stat= -p "$1" 2> /dev/null | cut -c1)" = Z ]; then break; fi
		i=$((i + 1))
		[ "$i" -le "$2" ] || return 1
		sleep 0.1
	done
	wait "$1"
	st=$?
	return 0
}

now() { date +%s.%N; }

# --- the hosts ---------------------------------------------------------

[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (running as uid $(id -u))"
# iproute2 (ip, tc) is Debian's; installed when missing, as root can
if ! command -v ip > /dev/null 2>&1 || ! command -v tc > /dev/null 2>&1; then
	echo "hosts: installing iproute2 (ip, tc) with apt-get"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends iproute2; } > "$TMP/apt.log" 2>&1 ||
		skip "iproute2 is missing and apt-get could not install it: $(tail -2 "$TMP/apt.log")"
fi
# Each step that can fail for want of what this machine gives is tried on
# its own, and its skip quotes the command and its error.
err() { tr '\n' ' ' < "$1" | sed 's/ *$//'; }
if ! ip netns add "$HUB" 2> "$TMP/netns.err"; then
	skip "'ip netns add' fails here (no CAP_SYS_ADMIN?): $(err "$TMP/netns.err")"
fi
made_ns=$HUB
# ip -n and ip netns exec enter the namespace after making / a slave
# mount (`mount --make-rslave /`), which fails where / is no mount point
# (a chroot) or mounts are locked
if ! ip netns exec "$HUB" true 2> "$TMP/enter.err"; then
	skip "cannot enter a network namespace: 'ip netns exec $HUB true': $(err "$TMP/enter.err")"
fi
if ! ip -n "$HUB" link add br0 type bridge 2> "$TMP/br.err"; then
	case $(cat "$TMP/br.err") in
	*"Unknown device type"* | *"not supported"*)
		skip "no Linux bridge in this kernel: 'ip link add br0 type bridge': $(err "$TMP/br.err")" ;;
	esac
	skip "'ip -n $HUB link add br0 type bridge' failed: $(err "$TMP/br.err")"
fi
ip -n "$HUB" link set lo up
ip -n "$HUB" link set br0 up

# a /24 in 10.0.0.0/8 picked per run
set -- $(od -An -N2 -tu1 /dev/urandom)
NET="10.$(($1 % 254 + 1)).$2"
addr_of() {
	case $1 in
	chief) echo "$NET.2" ;; ps0) echo "$NET.10" ;; ps1) echo "$NET.11" ;;
	w0) echo "$NET.20" ;; w1) echo "$NET.21" ;;
	esac
}
# the hub's side of task $1's link
hub_if() { echo "h-$1"; }

hosts_file() {
	echo "127.0.0.1 localhost"
	for h in $TASKS; do echo "$(addr_of "$h") $h.pasco.test $h"; done
}
for t in $TASKS; do
	ns="$P-$t"
	ip netns add "$ns" 2> "$TMP/netns.err" ||
		skip "'ip netns add $ns' failed: $(err "$TMP/netns.err")"
	made_ns="$made_ns $ns"
	mkdir -p "/etc/netns/$ns"
	hosts_file > "/etc/netns/$ns/hosts"
	if ! ip link add veth0 netns "$ns" type veth peer name "$(hub_if "$t")" netns "$HUB" 2> "$TMP/veth.err"; then
		skip "no veth pairs here: 'ip link add veth0 ... type veth': $(err "$TMP/veth.err")"
	fi
	ip -n "$HUB" link set "$(hub_if "$t")" master br0
	ip -n "$HUB" link set "$(hub_if "$t")" up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$(addr_of "$t")/24" dev veth0
	ip -n "$ns" link set veth0 up
done
if ip netns exec "$P-w1" getent hosts ps0.pasco.test > "$TMP/getent.out" 2>&1 &&
	grep -q "^$(addr_of ps0) " "$TMP/getent.out"; then
	ok "5 hosts on $NET.0/24, named in /etc/netns/*/hosts"
else
	skip "ip netns exec does not mount /etc/netns/NS/hosts here: $(cat "$TMP/getent.out")"
fi
if ip -n "$HUB" link show master br0 | grep -c '^[0-9]' | grep -qx 5 &&
	[ -z "$(ip -4 addr show | grep " $NET\.")" ] &&
	[ -z "$(ip route show | grep "$NET\.")" ]; then
	ok "all 5 links on the hub's bridge; no address or route in the root namespace"
else
	fail "topology: $(ip -n "$HUB" link show master br0)"
fi

tf_config() { # TYPE INDEX
	printf '{"cluster": {"chief": ["chief.pasco.test:%s"], "ps": ["ps0.pasco.test:%s", "ps1.pasco.test:%s"], "worker": ["w0.pasco.test:%s", "w1.pasco.test:%s"]}, "task": {"type": "%s", "index": %s}}' \
		$PORT $PORT $PORT $PORT $PORT "$1" "$2"
}

# starts ps0, ps1, w0, w1 running PROGRAM in their namespaces; their pids
# in $task_pids, their logs in $TMP/NAME-TASK.log
start_tasks() { # NAME PROGRAM
	task_pids=""
	for t in ps0 ps1 w0 w1; do
		case $t in
		ps*) type=ps index=${t#ps} ;;
		*) type=worker index=${t#w} ;;
		esac
		ip netns exec "$P-$t" env PASCO_TEST_MARK="$MARK" PASCO_LOG=2 \
			${TASK_ENV:-} TF_CONFIG="$(tf_config $type "$index")" "$2" > "$TMP/$1-$t.log" 2>&1 &
		task_pids="$task_pids $!"
	done
	pids="$pids $task_pids"
}

# runs the chief in its namespace, in the background: pid in $chief_pid,
# its output, each line stamped with the time it came, in $TMP/NAME.out
start_chief() { # NAME PROGRAM ARGS...
	name=$1
	shift
	(ip netns exec "$P-chief" env PASCO_TEST_MARK="$MARK" PASCO_LOG=2 \
		TF_CONFIG="$(tf_config chief 0)" timeout 150 "$@" 2>&1 |
		while IFS= read -r line; do echo "$(now) $line"; done
	exit 0) > "$TMP/$name.out" &
	chief_pid=$!
	pids="$pids $chief_pid"
}

# the chief's output without the time stamps
chief_log() { cut -d' ' -f2- "$TMP/$1.out"; }

# waits for the chief, then for every task: each exits 0 after the chief's
# SHUTDOWN, and nothing of the run is left in any namespace
finish_run() { # NAME WHAT
	if ! wait_exit "$chief_pid" 1500; then
		fail "$2: the chief did not finish in 150 s"
		return
	fi
	bad=""
	for p in $task_pids; do
		if ! wait_exit "$p" 150 || [ "$st" -ne 0 ]; then bad="$bad $p"; fi
	done
	left=""
	for ns in $made_ns; do left="$left$(ip netns pids "$ns")"; done
	if [ -z "$bad" ] && [ -z "$left" ] && [ -z "$(marked)" ] &&
		[ "$(cat "$TMP/$1"-*.log | grep -c 'the chief is done; exiting')" -eq 4 ]; then
		ok "$2: every ps and worker exited 0 when the chief finished"
	else
		fail "$2: tasks not ended cleanly (pids$bad, left '$left')"
		tail -n 3 "$TMP/$1"-*.log
	fi
}

# w and b within 0.01 of 0.8 and 1
converged() { # NAME WHAT
	w=$(chief_log "$1" | sed -n 's/^w = //p')
	b=$(chief_log "$1" | sed -n 's/^b = //p')
	if awk -v w="$w" -v b="$b" 'BEGIN { d1 = w - 0.8; d2 = b - 1; exit !(w != "" && b != "" && d1 < 0.01 && d1 > -0.01 && d2 < 0.01 && d2 > -0.01) }'; then
		ok "$2: learnt w = $w, b = $b"
	else
		fail "$2: learnt w = '$w', b = '$b' (want 0.8 and 1 within 0.01)"
		tail -n 20 "$TMP/$1.out"
	fi
}

# steps/s from the time stamps of the first and last epoch lines
steps_per_s() { # NAME STEPS_PER_EPOCH
	awk -v steps="$2" '$2 == "epoch" && $4 == "loss" {
		n++; if (n == 1) t0 = $1; t1 = $1 }
		END { if (n < 2 || t1 <= t0) print "?"; else printf "%.0f\n", (n - 1) * steps / (t1 - t0) }' \
		"$TMP/$1.out"
}

# nothing of ours listens or connects in the root namespace, while the ps
# listens on its port in its own
inside_namespaces() { # WHAT
	if ss -Htan | awk -v p=":$PORT" -v net="$NET." '
			($1 == "LISTEN" && index($4, p) == length($4) - length(p) + 1) ||
			index($4, net) == 1 || index($5, net) == 1 { bad = 1; print }
			END { exit bad }' > "$TMP/root.ss" &&
		ip netns exec "$P-ps0" ss -Hltn | grep -q ":$PORT " &&
		[ "$(ip netns exec "$P-ps0" ss -Hltn | wc -l)" -eq 2 ] &&
		[ "$(ip netns exec "$P-w0" ss -Hltn | wc -l)" -eq 2 ] &&
		[ -z "$(ip netns exec "$P-chief" ss -Hltn)" ] &&
		ip netns exec "$P-ps0" ss -Htn state established | grep -q "$NET"; then
		ok "$1: traffic inside the namespaces (ps0 and w0 listen on $PORT and their bulk ports, the chief nowhere; nothing in the root namespace)"
	else
		fail "$1: root namespace sees: $(cat "$TMP/root.ss")"
	fi
}

# --- 1. linear regression across the hosts ------------------------------
start_tasks lr "$LINREG"
start_chief lr "$LINREG" --epochs 20 --steps 100
if wait_for 'grep -q " epoch 2: loss" "$TMP/lr.out"' 600; then
	inside_namespaces "linear regression"
fi
finish_run lr "linear regression"
converged lr "linear regression across 5 hosts"
rate0=$(steps_per_s lr 100)

# --- 2. the tutorial's model ---------------------------------------------
start_tasks emb "$CLASSIFIER"
# 40 epochs of 20 steps: still training when the connections are looked at
# (its 5 by default can end between one look and the next)
start_chief emb "$CLASSIFIER" --epochs 40
# its embedding shards are large tensors (>= 4 KiB): read over ps0's bulk
# port, an ephemeral one, reached at ps0's name
bulk=""
if wait_for 'grep -q "Epoch 2/[0-9]*: " "$TMP/emb.out"' 600; then
	bulk=$(ip netns exec "$P-ps0" ss -Hltn | awk '{ sub(/.*:/, "", $4); print $4 }' | grep -vx "$PORT")
	bulk_peers=$(ip netns exec "$P-ps0" ss -Htn state established "( sport = :${bulk:-0} )" | grep -c "$NET\.2[01]:")
	# the chief's closures go to each worker's bulk port
	wbulk=$(ip netns exec "$P-w0" ss -Hltn | awk '{ sub(/.*:/, "", $4); print $4 }' | grep -vx "$PORT")
	wbulk_peers=$(ip netns exec "$P-w0" ss -Htn state established "( sport = :${wbulk:-0} )" | grep -c "$NET\.2:")
fi
if [ -n "$bulk" ] && [ "${bulk_peers:-0}" -gt 0 ]; then
	ok "embedding classifier: workers read from ps0's bulk port $bulk ($bulk_peers connections)"
else
	fail "embedding classifier: no bulk connection to ps0 (bulk port '$bulk')"
fi
if [ -n "$wbulk" ] && [ "${wbulk_peers:-0}" -gt 0 ]; then
	ok "embedding classifier: the chief sends closures to w0's bulk port $wbulk ($wbulk_peers connections)"
else
	fail "embedding classifier: no connection from the chief to w0's bulk port ('$wbulk')"
fi
finish_run emb "embedding classifier"
# its embedding rows are large tensors: they go over each ps's bulk port,
# reached at the ps's name, not over nng
if ! grep -q 'using nng for every\|no bulk transfers\|no bulk port' "$TMP/emb.out" "$TMP"/emb-*.log; then
	ok "embedding classifier: bulk transfers across hosts, no fallback to nng"
else
	fail "embedding classifier: bulk fell back to nng: $(grep -h 'nng' "$TMP/emb.out" "$TMP"/emb-*.log | head -n 3)"
fi
acc=$(chief_log emb | sed -n 's/^accuracy = //p')
loss=$(chief_log emb | sed -n 's/^Epoch [0-9]*\/[0-9]*: .* loss \([0-9.e+-]*\),.*/\1/p' | tail -n 1)
if awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.95) }'; then
	ok "embedding classifier across 5 hosts: accuracy = $acc, last loss = $loss"
else
	fail "embedding classifier: accuracy '$acc'"
	tail -n 20 "$TMP/emb.out"
fi

# --- 3. 5 ms and 200 mbit/s on every link -------------------------------
rate5="skipped"
QDISC="netem delay 5ms rate 200mbit"
QDISC_KIND=netem
LABEL="5 ms"
if ! ip netns exec "$P-ps0" tc qdisc add dev veth0 root $QDISC 2> "$TMP/tc.err"; then
	# a kernel without sch_netem: the bandwidth limit alone, with tbf
	echo "SKIP: netem delay: tc cannot add a netem qdisc here ($(cat "$TMP/tc.err")); limiting the bandwidth only, with tbf"
	QDISC="tbf rate 200mbit burst 64kb latency 20ms"
	QDISC_KIND=tbf
	LABEL="200 mbit/s, no delay (no netem)"
	ip netns exec "$P-ps0" tc qdisc add dev veth0 root $QDISC 2> "$TMP/tc.err" ||
		{ echo "SKIP: tbf: $(cat "$TMP/tc.err")"; QDISC=""; rate5="skipped (neither netem nor tbf)"; }
fi
if [ -n "$QDISC" ]; then
	for t in ps1 w0 w1 chief; do
		ip netns exec "$P-$t" tc qdisc add dev veth0 root $QDISC
	done
	n=0
	for t in $TASKS; do
		if ip netns exec "$P-$t" tc qdisc show dev veth0 | grep -q "$QDISC_KIND"; then n=$((n + 1)); fi
	done
	if [ "$n" -eq 5 ]; then ok "$QDISC on all 5 links"; else fail "$QDISC on $n links of 5"; fi
	start_tasks delay "$LINREG"
	start_chief delay "$LINREG" --epochs 20 --steps 100
	finish_run delay "$LABEL"
	converged delay "linear regression at $LABEL"
	rate5=$(steps_per_s delay 100)
	for t in $TASKS; do ip netns exec "$P-$t" tc qdisc del dev veth0 root 2> /dev/null; done
fi
echo "hosts: steps/s at 0 ms: $rate0, at $LABEL: $rate5"

# --- 4. a worker cut off for a few seconds ------------------------------
# Long enough to outlast the chief's heartbeat timeout (3 s) with training
# left after the link returns: about 15 s at scenario 1's rate.
epochs=20
case $rate0 in
'' | *[!0-9]*) ;;
*) epochs=$((rate0 * 15 / 100)); [ "$epochs" -ge 20 ] || epochs=20; [ "$epochs" -le 600 ] || epochs=600 ;;
esac
start_tasks part "$LINREG"
start_chief part "$LINREG" --epochs "$epochs" --steps 100
if wait_for 'grep -q " epoch 2: loss" "$TMP/part.out"' 600; then
	ip -n "$HUB" link set "$(hub_if w1)" down
	echo "$(now) test: w1's link down" >> "$TMP/part.marks"
	wait_for 'grep -q "worker 1 is unavailable" "$TMP/part.out"' 100
	sleep 2
	ip -n "$HUB" link set "$(hub_if w1)" up
	echo "$(now) test: w1's link up" >> "$TMP/part.marks"
else
	fail "partition: training never started"
fi
finish_run part "partition"
converged part "linear regression through a partition ($epochs epochs)"
chief_log part > "$TMP/part.txt"
# w1 failed and its closures retried (the retries may be logged before
# or after the failure), then w1 up again, then more epochs
if awk '
	/worker 1 is unavailable/ && !down { down = NR }
	/closure [0-9]+ \(.(train_step|pasco\.model_train).\) is retried: .*w1\.pasco\.test/ { retried++ }
	down && /worker 1 is up \(incarnation/ && !back { back = NR }
	back && /^epoch [0-9]+: loss/ { after++ }
	END { exit !(down && retried && back && after > 0) }' "$TMP/part.txt"; then
	ok "partition: worker 1 failed, its closures retried ($(grep -c 'is retried' "$TMP/part.txt")), it rejoined, training went on"
else
	fail "partition: the chief's log lacks fail / retry / rejoin:"
	grep -E 'worker|retried' "$TMP/part.txt" | head -n 20
	cat "$TMP/part.marks" 2> /dev/null
fi
# a retry goes elsewhere: none is sent back to w1 while it is out (the
# rpc client reports the task down before failing its calls; reported
# after, the dispatcher spun, retrying hundreds of closures on w1 at once)
spun=$(grep -c 'is retried: not connected to tcp://w1' "$TMP/part.txt")
if [ "$spun" -lt 10 ]; then
	ok "partition: retries went to worker 0, not back to the cut-off worker 1 ($spun)"
else
	fail "partition: $spun closures retried on worker 1 while it was not connected"
fi
# while w1 was cut off, epochs (each joined: every closure done, the
# retried ones included) still finished, on w0
during=$(awk 'NR == FNR { t[NR] = $1; next }
	$2 == "epoch" && $4 == "loss" && $1 > t[1] && $1 < t[2] { n++ }
	END { print n + 0 }' "$TMP/part.marks" "$TMP/part.out" 2> /dev/null)
if [ "${during:-0}" -gt 0 ]; then
	ok "partition: $during epochs finished on worker 0 while worker 1 was cut off"
else
	fail "partition: no epoch finished while worker 1 was cut off"
fi
if [ "$(grep -c 'worker 0 is unavailable' "$TMP/part.txt")" -eq 0 ]; then
	ok "partition: worker 0 was never failed"
else
	fail "partition: worker 0 was failed too"
fi

# --- 5. one worker cut from one ps ---------------------------------------
# w1 loses ps0 (which holds w) for about 10 s; the chief, w0 and ps0 still
# reach each other. A closure's ps requests wait 2 s here.
cut_w1_ps0() { # -A or -D
	ip netns exec "$P-w1" iptables "$1" OUTPUT -d "$(addr_of ps0)" -j DROP &&
		ip netns exec "$P-w1" iptables "$1" INPUT -s "$(addr_of ps0)" -j DROP
}
if ! ip netns exec "$P-w1" iptables -L OUTPUT > "$TMP/ipt.err" 2>&1; then
	echo "SKIP: ps cut: iptables does not work here: $(err "$TMP/ipt.err")"
else
	TASK_ENV="PASCO_PS_REQUEST_TIMEOUT=2"
	start_tasks pscut "$LINREG"
	TASK_ENV=""
	start_chief pscut "$LINREG" --epochs "$epochs" --steps 100
	if wait_for 'grep -q " epoch 2: loss" "$TMP/pscut.out"' 600; then
		cut_w1_ps0 -A
		echo "$(now) test: w1 cut from ps0" >> "$TMP/pscut.marks"
		wait_for 'grep -q "ps 0 is unreachable from worker 1, but the chief reaches it" "$TMP/pscut.out"' 150
		sleep 5
		cut_w1_ps0 -D
		echo "$(now) test: w1 reaches ps0 again" >> "$TMP/pscut.marks"
	else
		fail "ps cut: training never started"
	fi
	finish_run pscut "ps cut"
	converged pscut "linear regression through a cut between worker 1 and ps 0 ($epochs epochs)"
	chief_log pscut > "$TMP/pscut.txt"
	if grep -q "ps 0 is unreachable from worker 1, but the chief reaches it: worker 1's link" "$TMP/pscut.txt"; then
		ok "ps cut: the chief named worker 1's link to ps 0 and benched worker 1"
	else
		fail "ps cut: the chief did not name the cut link:"
		grep -E 'worker|retried|unreachable' "$TMP/pscut.txt" | head -n 20
	fi
	during=$(awk 'NR == FNR { t[NR] = $1; next }
		$2 == "epoch" && $4 == "loss" && $1 > t[1] && $1 < t[2] { n++ }
		END { print n + 0 }' "$TMP/pscut.marks" "$TMP/pscut.out" 2> /dev/null)
	if [ "${during:-0}" -gt 0 ]; then
		ok "ps cut: $during epochs finished while worker 1 could not reach ps 0"
	else
		fail "ps cut: no epoch finished while worker 1 could not reach ps 0 (a stall)"
	fi
	if [ "$(grep -c 'worker [01] is unavailable' "$TMP/pscut.txt")" -eq 0 ]; then
		ok "ps cut: no worker was failed (both answer the chief)"
	else
		fail "ps cut: a worker was failed"
	fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
