#!/bin/sh
# TLS (tls+tcp:// addresses, net/tls.c) with real processes on loopback and
# certificates made here with openssl:
#  1. a cluster over mutual TLS trains the linear regression (w 0.8, b 1),
#     and no task says it is "open to anyone" (TLS authenticates peers;
#     a plain tcp ps without a key does say it);
#  4. its ps opened no bulk port (one listening socket, and says why);
#  2. a chief whose certificate comes from another CA is refused: it fails
#     within 20 s naming TLS, and the ps and the worker log the refusal;
#  3. tls+tcp without PASCO_TLS_* fails at once, naming the variable, in
#     every role; an unreadable file is named too.
# Skips (77) when openssl is missing and cannot be installed.
# usage: test_tls.sh LINEAR_REGRESSION
set -u
linreg=$1
if ! command -v openssl > /dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get > /dev/null 2>&1; then
		apt-get install -y openssl > /dev/null 2>&1 ||
			{ apt-get update > /dev/null 2>&1 &&
				apt-get install -y openssl > /dev/null 2>&1; }
	fi
	if ! command -v openssl > /dev/null 2>&1; then
		echo "SKIP: openssl is missing and could not be installed"
		exit 77
	fi
fi
. "$(dirname "$0")/harness.sh" # $tmp, $pids, ok / fail, ports

# A CA, a certificate for 127.0.0.1 signed by it, and a second CA with a
# certificate of its own. mbedTLS 2.28 (Debian's nng) matches the dialed
# host against DNS entries only, so the address is a DNS entry too.
ca() { # NAME
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$tmp/$1.key" -out "$tmp/$1.pem" -days 2 \
		-subj "/CN=pasco test $1" > /dev/null 2>&1
}
cert() { # NAME CA
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$tmp/$1.key" -out "$tmp/$1.csr" -subj "/CN=$1" > /dev/null 2>&1 &&
		printf 'subjectAltName=IP:127.0.0.1,DNS:127.0.0.1,DNS:localhost\n' > "$tmp/$1.ext" &&
		openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/$2.pem" -CAkey "$tmp/$2.key" \
			-CAcreateserial -out "$tmp/$1.pem" -days 2 -extfile "$tmp/$1.ext" > /dev/null 2>&1
}
if ! ca ca || ! ca ca2 || ! cert task ca || ! cert other ca2; then
	echo "FAIL: openssl could not make the test certificates"
	exit 1
fi

tf_config() { # TYPE PS WORKER CHIEF
	printf '{"cluster": {"ps": ["tls+tcp://127.0.0.1:%s"], "worker": ["tls+tcp://127.0.0.1:%s"], "chief": ["tls+tcp://127.0.0.1:%s"]}, "task": {"type": "%s", "index": 0}}' \
		"$2" "$3" "$4" "$1"
}
# listening TCP sockets held by pid $1
listeners() {
	python3 -c 'import os,sys
pid=sys.argv[1]
inodes=set()
for fd in os.listdir("/proc/%s/fd" % pid):
    try: l=os.readlink("/proc/%s/fd/%s" % (pid, fd))
    except OSError: continue
    if l.startswith("socket:["): inodes.add(l[8:-1])
n=0
for f in ("/proc/net/tcp", "/proc/net/tcp6"):
    try: lines=open(f).read().splitlines()[1:]
    except OSError: continue
    for x in lines:
        c=x.split()
        if c[3]=="0A" and c[9] in inodes: n+=1
print(n)' "$1"
}
# starts the ps and the worker of ports $1 $2 $3 with the task certificate
start_tasks() {
	PASCO_TLS_CERT=$tmp/task.pem PASCO_TLS_KEY=$tmp/task.key PASCO_TLS_CA=$tmp/ca.pem \
		PASCO_LOG=info PASCO_CHIEF_TIMEOUT=30 TF_CONFIG=$(tf_config ps "$1" "$2" "$3") \
		"$linreg" 2> "$tmp/ps.log" &
	ps_pid=$!
	# the worker takes its certificate as options, as pasco_main offers
	PASCO_LOG=info PASCO_CHIEF_TIMEOUT=30 TF_CONFIG=$(tf_config worker "$1" "$2" "$3") \
		"$linreg" --tls-cert "$tmp/task.pem" --tls-key="$tmp/task.key" \
		--tls-ca "$tmp/ca.pem" 2> "$tmp/w.log" &
	w_pid=$!
	pids="$ps_pid $w_pid"
}
stop_tasks() {
	kill "$ps_pid" "$w_pid" 2> /dev/null
	wait "$ps_pid" "$w_pid" 2> /dev/null
	pids=""
}
wait_listening() { # up to 5 s for the ps to listen
	i=0
	while [ "$i" -lt 50 ] && ! grep -q 'serving at' "$tmp/ps.log" 2> /dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
}

# 1 and 4: a cluster over TLS
set -- $(ports 3)
start_tasks "$1" "$2" "$3"
wait_listening
nl=$(listeners "$ps_pid")
if PASCO_TLS_CERT=$tmp/task.pem PASCO_TLS_KEY=$tmp/task.key PASCO_TLS_CA=$tmp/ca.pem \
	TF_CONFIG=$(tf_config chief "$1" "$2" "$3") timeout 60 "$linreg" > "$tmp/chief.out" 2>&1 &&
	grep -q '^w = 0\.8' "$tmp/chief.out" && grep -q '^b = 1\.0' "$tmp/chief.out"; then
	ok "a cluster over mutual TLS trains the linear regression ($(grep '^[wb] =' "$tmp/chief.out" | tr '\n' ' '))"
else
	fail "training over TLS: $(tail -5 "$tmp/chief.out")"
fi
cp "$tmp/ps.log" "$tmp/ps.log.tls"
stop_tasks
open=$(grep -l 'open to anyone' "$tmp/ps.log.tls" "$tmp/w.log" "$tmp/chief.out")
if [ -z "$open" ]; then
	ok "no task under mutual TLS warns that the cluster is open to anyone"
else
	fail "under mutual TLS, open to anyone: $open: $(grep -h 'open to anyone' $open | head -1)"
fi
# the same count for a plain tcp ps: its port and its bulk port
PASCO_LOG=info TF_CONFIG=$(tf_config ps "$1" "$2" "$3" | sed 's/tls+tcp/tcp/g') \
	"$linreg" 2> "$tmp/ps.log" &
ps_pid=$!
pids=$ps_pid
wait_listening
nplain=$(listeners "$ps_pid")
kill "$ps_pid"
wait "$ps_pid" 2> /dev/null
pids=""
if grep -q 'open to anyone' "$tmp/ps.log"; then
	ok "a plain tcp ps without a key warns that it is open to anyone"
else
	fail "a plain tcp ps without a key: no warning: $(head -3 "$tmp/ps.log")"
fi
if [ "$nl" = 1 ] && [ "$nplain" = 2 ] && grep -q 'TLS, so no bulk port' "$tmp/ps.log.tls"; then
	ok "a tls+tcp ps opened no bulk port (1 listening socket; 2 over tcp) and says so"
else
	fail "the ps under TLS: $nl listening sockets ($nplain over tcp); $(head -3 "$tmp/ps.log.tls")"
fi

# 2: a chief with a certificate from another CA
set -- $(ports 3)
start_tasks "$1" "$2" "$3"
wait_listening
start=$(date +%s)
PASCO_TLS_CERT=$tmp/other.pem PASCO_TLS_KEY=$tmp/other.key PASCO_TLS_CA=$tmp/ca2.pem \
	TF_CONFIG=$(tf_config chief "$1" "$2" "$3") timeout 60 "$linreg" > "$tmp/chief.out" 2>&1
st=$?
took=$(($(date +%s) - start))
if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] && [ "$took" -le 20 ] &&
	grep -q 'TLS handshake(s) failed' "$tmp/chief.out"; then
	ok "a chief from another CA is refused in ${took} s: $(grep -m1 'at tls+tcp.*TLS' "$tmp/chief.out" | sed 's/.*pasco error: //')"
else
	fail "a chief from another CA: status $st after ${took} s: $(tail -3 "$tmp/chief.out")"
fi
sleep 0.5 # the tasks' watchers read nng's counts every 250 ms
for t in "ps:$tmp/ps.log" "worker:$tmp/w.log"; do
	if grep -q 'TLS: .* handshake(s) refused on tls+tcp://' "${t#*:}"; then
		ok "the ${t%%:*} logs the refusal"
	else
		fail "the ${t%%:*} logged no refusal: $(tail -3 "${t#*:}")"
	fi
done
stop_tasks

# 3: tls+tcp without the configuration, in every role, at once
set -- $(ports 3)
for role in ps worker chief; do
	start=$(date +%s)
	out=$(env -u PASCO_TLS_CERT -u PASCO_TLS_KEY -u PASCO_TLS_CA \
		TF_CONFIG="$(tf_config $role "$1" "$2" "$3")" timeout 30 "$linreg" 2>&1)
	st=$?
	took=$(($(date +%s) - start))
	if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] && [ "$took" -le 5 ] &&
		echo "$out" | grep -q 'TLS is not configured: PASCO_TLS_CERT is not set'; then
		ok "$role without PASCO_TLS_*: fails in ${took} s naming PASCO_TLS_CERT"
	else
		fail "$role without PASCO_TLS_*: status $st after ${took} s: $out"
	fi
done
out=$(PASCO_TLS_CERT=$tmp/task.pem PASCO_TLS_KEY=$tmp/missing.key PASCO_TLS_CA=$tmp/ca.pem \
	TF_CONFIG=$(tf_config ps "$1" "$2" "$3") timeout 30 "$linreg" 2>&1)
st=$?
if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] &&
	echo "$out" | grep -q "cannot read PASCO_TLS_KEY=$tmp/missing.key"; then
	ok "an unreadable key file is named"
else
	fail "a missing key file: status $st: $out"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
