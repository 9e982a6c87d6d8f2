#!/bin/sh
# The command lines of `pasco` and of every example: unknown or malformed
# options are named (exit 2, a hint to --help), --help and --version print
# to stdout (exit 0); PASCO_LOG's names and timestamped log lines; the
# chief's connect wait logged every 5 s; the evaluator role. No cluster is
# started: a chief parses its options before it reaches for the cluster.
# usage: test_cli.sh VERSION PASCO COUNTER LINEAR_REGRESSION CLASSIFIER
#        SPARSE_LOGREG WIDE_DEEP MAKE_CLICKS
set -u
VERSION=$1 PASCO=$2 COUNTER=$3 LINREG=$4 CLASSIFIER=$5 SPARSE=$6 WIDE=$7 CLICKS=$8
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

# a port nothing listens on (bound, then closed)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tf_config() { # TYPE
	echo "{\"cluster\":{\"chief\":[\"127.0.0.1:1\"],\"ps\":[\"127.0.0.1:$PORT\"],\"worker\":[\"127.0.0.1:3\"],\"evaluator\":[\"127.0.0.1:4\"]},\"task\":{\"type\":\"$1\",\"index\":0}}"
}

# run NAME WANT_STATUS CMD...: stdout in $TMP/out, stderr in $TMP/err
run() {
	name=$1 want=$2
	shift 2
	"$@" > "$TMP/out" 2> "$TMP/err"
	st=$?
	if [ "$st" -ne "$want" ]; then
		fail "$name: status $st, want $want; stderr: $(cat "$TMP/err")"
		return 1
	fi
	return 0
}

# bad NAME WHAT CMD...: exit 2, WHAT named on stderr, then the --help hint
bad() {
	name=$1 what=$2
	shift 2
	if run "$name" 2 "$@"; then
		if grep -qF -- "$what" "$TMP/err" && tail -1 "$TMP/err" | grep -q -- "--help" &&
			[ ! -s "$TMP/out" ]; then
			ok "$name: names $what"
		else
			fail "$name: stderr does not name $what with a hint: $(cat "$TMP/err")"
		fi
	fi
}

# good NAME PATTERN CMD...: exit 0, PATTERN on stdout, nothing on stderr
good() {
	name=$1 pattern=$2
	shift 2
	if run "$name" 0 "$@"; then
		if grep -q -- "$pattern" "$TMP/out" && [ ! -s "$TMP/err" ]; then
			ok "$name"
		else
			fail "$name: stdout $(head -3 "$TMP/out"), stderr $(cat "$TMP/err")"
		fi
	fi
}

# 1. pasco and pasco launch
good "pasco --help" '^usage: pasco' "$PASCO" --help
good "pasco --version" "^pasco $VERSION\$" "$PASCO" --version
good "pasco version" "^pasco $VERSION\$" "$PASCO" version
good "pasco launch --help" '^usage: pasco launch' "$PASCO" launch --help
good "pasco launch --version" "^pasco $VERSION\$" "$PASCO" launch --version
good "pasco checkpoint --help" '^usage: pasco checkpoint' "$PASCO" checkpoint --help
good "pasco checkpoint inspect --help" '^usage: pasco checkpoint' \
	"$PASCO" checkpoint inspect --help
bad "pasco --wrokers" "'--wrokers'" "$PASCO" --wrokers 2
bad "pasco frob" "'frob'" "$PASCO" frob
bad "pasco with no command" "no command" "$PASCO"
bad "launch --wrokers" "'--wrokers'" "$PASCO" launch --wrokers 2 -- true
bad "launch --ps 0" "--ps '0'" "$PASCO" launch --ps 0 -- true
bad "launch --workers x" "--workers 'x'" "$PASCO" launch --workers x -- true
bad "launch --ps with no value" "'--ps'" "$PASCO" launch --ps
bad "launch with no program" "no PROGRAM" "$PASCO" launch --ps 1

# 2. the examples: --help and --version with no cluster; bad options as the
# chief (they are parsed before the cluster is reached)
# (a chief that exits tells the ps and workers it is done, trying for
# 1.5 s: only a few bad-option runs per example)
for exe in "$COUNTER" "$LINREG" "$CLASSIFIER" "$SPARSE" "$WIDE" "$CLICKS"; do
	prog=$(basename "$exe")
	good "$prog --help" "^usage: " env -u TF_CONFIG "$exe" --help
	good "$prog --version" "^$prog (pasco $VERSION)\$" env -u TF_CONFIG "$exe" --version
done
for exe in "$COUNTER" "$LINREG" "$CLASSIFIER" "$SPARSE" "$WIDE"; do
	prog=$(basename "$exe")
	bad "$prog --epcohs 3" "'--epcohs'" env TF_CONFIG="$(tf_config chief)" "$exe" --epcohs 3
	# sidecar evaluators: below
	[ "$exe" = "$LINREG" ] || [ "$exe" = "$CLASSIFIER" ] && continue
	good "$prog as the evaluator" '^evaluator: nothing to evaluate in this example$' \
		env TF_CONFIG="$(tf_config evaluator)" "$exe"
done
good "linear_regression as the evaluator, without a checkpoint directory" \
	'^evaluator: nothing to evaluate without --checkpoint-dir$' \
	env TF_CONFIG="$(tf_config evaluator)" "$LINREG"
good "embedding_classifier as the evaluator, without a checkpoint directory" \
	'^evaluator: nothing to evaluate without --checkpoint-dir$' \
	env TF_CONFIG="$(tf_config evaluator)" "$CLASSIFIER"
bad "counter stray argument" "'stray'" env TF_CONFIG="$(tf_config chief)" "$COUNTER" stray
bad "linear_regression --wrokers 2" "'--wrokers'" env TF_CONFIG="$(tf_config chief)" "$LINREG" --wrokers 2
bad "linear_regression --epochs x" "--epochs needs an integer" env TF_CONFIG="$(tf_config chief)" "$LINREG" --epochs x
bad "embedding_classifier --epochs 0" "not '0'" env TF_CONFIG="$(tf_config chief)" "$CLASSIFIER" --epochs 0
bad "sparse_logreg --steps with no value" "'--steps'" env TF_CONFIG="$(tf_config chief)" "$SPARSE" --steps
bad "wide_deep stray argument" "'stray'" env TF_CONFIG="$(tf_config chief)" "$WIDE" stray
bad "linear_regression --lr x" "--lr needs a number" env TF_CONFIG="$(tf_config chief)" "$LINREG" --lr x
bad "make_clicks --shards 0" "--shards needs an integer" "$CLICKS" "$TMP/clicks" --shards 0
bad "make_clicks --trian" "'--trian'" "$CLICKS" "$TMP/clicks" --trian 5
bad "make_clicks with no DIR" "DIR" "$CLICKS"
bad "wide_deep --make-data --trian" "'--trian'" "$WIDE" --make-data "$TMP/census" --trian 5
# the cluster flags are still taken out before the example parses
bad "cluster flags, then a bad option" "'--epcohs'" env -u TF_CONFIG "$LINREG" \
	--chief-hosts=127.0.0.1:1 --ps-hosts=127.0.0.1:$PORT --worker-hosts=127.0.0.1:3 \
	--task-type=chief --task-index=0 --chief-timeout 5 --epcohs 3

# 3. logs: names, the unknown value said once, timestamp and task; the
# connect wait says what it waits for every 5 s
PASCO_LOG=verbose PASCO_CONNECT_TIMEOUT=6 TF_CONFIG="$(tf_config chief)" \
	timeout 30 "$COUNTER" > "$TMP/out" 2> "$TMP/err"
st=$?
if [ "$st" -ne 0 ] && [ "$(grep -c "PASCO_LOG='verbose' is not a log level" "$TMP/err")" -eq 1 ]; then
	ok "an unknown PASCO_LOG is reported once"
else
	fail "PASCO_LOG=verbose: status $st: $(cat "$TMP/err")"
fi
if grep -Eq "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z chief pasco warning: waiting for ps 0 at tcp://127.0.0.1:$PORT: Connection refused\$" "$TMP/err"; then
	ok "the connect wait logs what it waits for, with a timestamp and the task"
else
	fail "no 'waiting for ps 0' line: $(cat "$TMP/err")"
fi
if grep -q "did not answer within 6000 ms" "$TMP/err"; then
	ok "PASCO_CONNECT_TIMEOUT sets the connect timeout"
else
	fail "PASCO_CONNECT_TIMEOUT=6: $(cat "$TMP/err")"
fi
P2=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cfg="{\"cluster\":{\"chief\":[\"127.0.0.1:1\"],\"ps\":[\"127.0.0.1:$P2\"],\"worker\":[\"127.0.0.1:3\"]},\"task\":{\"type\":\"ps\",\"index\":0}}"
for level in info INFO 2; do
	PASCO_LOG=$level PASCO_CHIEF_TIMEOUT=1 TF_CONFIG=$cfg timeout 20 "$COUNTER" > "$TMP/out" 2> "$TMP/err"
	if grep -Eq "^[0-9-]{10}T[0-9:]{8}\.[0-9]{3}Z ps 0 pasco info: ps 0 serving at" "$TMP/err" &&
		! grep -q "not a log level" "$TMP/err"; then
		ok "PASCO_LOG=$level logs info lines naming the task"
	else
		fail "PASCO_LOG=$level: $(cat "$TMP/err")"
	fi
done
PASCO_LOG=error PASCO_CHIEF_TIMEOUT=1 TF_CONFIG=$cfg timeout 20 "$COUNTER" > "$TMP/out" 2> "$TMP/err"
if [ ! -s "$TMP/err" ]; then ok "PASCO_LOG=error keeps info quiet"; else fail "PASCO_LOG=error: $(cat "$TMP/err")"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
