#!/bin/sh
# Dataset factories and step functions read the program's own options on
# the workers (pasco_program_args, pasco_dataset_context.argv): real
# processes through `pasco launch`, 1 ps and 2 workers.
# usage: test_program_args.sh PASCO ARGS_PROGRAM
set -u
PASCO=$1
PROGRAM=$2
. "$(dirname "$0")/../tools/harness.sh"
export TMPDIR="$tmp"

out="$tmp/run.out"
timeout 60 "$PASCO" launch --ps 1 --workers 2 -- \
	"$PROGRAM" --count 5 --tag hello > "$out" 2>&1
status=$?
if [ "$status" -eq 0 ] &&
	grep -q "] sum 10 tag hello argc 5 (chief argc 5)$" "$out"; then
	ok "the factory and the step function see --count 5 --tag hello"
else
	fail "status $status; output:"
	cat "$out"
fi

timeout 60 "$PASCO" launch --ps 1 --workers 1 -- \
	"$PROGRAM" --count 3 > "$out" 2>&1
status=$?
if [ "$status" -ne 0 ] && grep -q "no --tag" "$out"; then
	ok "a step function's error about its options reaches the chief"
else
	fail "status $status; output:"
	cat "$out"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
