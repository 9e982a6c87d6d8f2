#!/bin/sh
# Integration tests with real processes: the linear-regression example run
# through `pasco launch` on loopback, plus interruption, a killed
# launcher and a killed ps recovered. Every task of a run carries PASCO_TEST_MARK in its environment,
# so leftovers are found by scanning /proc; every wait is bounded.
# usage: test_launch.sh PASCO EXAMPLE CLASSIFIER MAKE_CLICKS SPARSE_LOGREG WIDE_DEEP CUSTOM_LOOP
#        MAKE_TABLE MLP_CSV
set -u
PASCO=$1
EXAMPLE=$2
CLASSIFIER=$3
MAKE_CLICKS=$4
SPARSE_LOGREG=$5
WIDE_DEEP=$6
CUSTOM_LOOP=$7
MAKE_TABLE=$8
MLP_CSV=$9
TMP=$(mktemp -d)
# Each launcher makes its cluster key file (pasco-key-*) under TMPDIR and
# removes it when it ends; one killed with SIGKILL cannot, and this test
# kills some: their key files go with $TMP.
export TMPDIR="$TMP"
killed=0
MARK="pasco-test-$$"
passed=0
failed=0
trap 'cleanup; rm -rf "$TMP"' EXIT

# pids of processes carrying our marker
marked() {
	for e in /proc/[0-9]*/environ; do
		if { tr '\0' '\n' < "$e"; } 2>/dev/null | grep -qx "PASCO_TEST_MARK=$MARK"; then
			p=${e#/proc/}
			echo "${p%/environ}"
		fi
	done
}

cleanup() {
	for p in $(marked); do kill -9 "$p" 2>/dev/null; done
}

ok() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

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

no_leftovers() {
	wait_for '[ -z "$(marked)" ]' 100
}

# 1. The example converges through pasco launch.
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 -- \
	"$EXAMPLE" > "$TMP/run.out" 2>&1
status=$?
if [ "$status" -eq 0 ]; then ok "example exits 0"; else fail "example exited $status"; cat "$TMP/run.out"; fi
w=$(sed -n 's/^\[chief 0\] w = //p' "$TMP/run.out")
b=$(sed -n 's/^\[chief 0\] b = //p' "$TMP/run.out")
if awk -v w="$w" -v b="$b" 'BEGIN { d1 = w - 0.8; d2 = b - 1; exit !(w != "" && b != "" && d1 < 0.01 && d1 > -0.01 && d2 < 0.01 && d2 > -0.01) }'; then
	ok "learnt w = $w, b = $b"
else
	fail "learnt w = '$w', b = '$b' (want 0.8 and 1 within 0.01)"
fi
if grep -q '^\[chief 0\] epoch 20: loss = ' "$TMP/run.out"; then ok "loss printed per epoch"; else fail "no per-epoch loss"; fi
if grep -q '^\[chief 0\] w on ps 0, b on ps 1; 2 workers' "$TMP/run.out"; then ok "variables placed round-robin"; else fail "placement line missing"; fi
if no_leftovers; then ok "no process left after the run"; else fail "left behind: $(marked)"; fi

# 1b. The tutorial's model reaches accuracy >= 0.95 on held-out examples.
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 -- \
	"$CLASSIFIER" > "$TMP/cls.out" 2>&1
status=$?
acc=$(sed -n 's/^\[chief 0\] accuracy = //p' "$TMP/cls.out")
if [ "$status" -eq 0 ] && awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.95) }'; then
	ok "embedding classifier: accuracy = $acc"
else
	fail "embedding classifier: status $status, accuracy '$acc'"; cat "$TMP/cls.out"
fi
if grep -q '^\[chief 0\] embedding/embeddings/part_1: rows \[4, 8) on ps 1' "$TMP/cls.out"; then ok "embedding split in 2 shards over 2 ps"; else fail "embedding layout line missing"; fi

# 1b'. The same model trained by a custom loop: a step of its own that
# calls the model and the tape.
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 -- \
	"$CUSTOM_LOOP" > "$TMP/loop.out" 2>&1
status=$?
acc=$(sed -n 's/^\[chief 0\] accuracy = //p' "$TMP/loop.out")
# the last epoch's training accuracy, a mean over its steps: asynchronous
# RMSprop(0.1) may spike within an epoch (CI under ASan once saw 0.93
# with the final evaluation at 1.0), so >= 0.9 there, >= 0.95 evaluated
last=$(sed -n 's/^\[chief 0\] Finished epoch 4, loss = .*, accuracy = //p' "$TMP/loop.out")
if [ "$status" -eq 0 ] && awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.95) }' &&
	awk -v a="$last" 'BEGIN { exit !(a != "" && a >= 0.9) }'; then
	ok "custom loop: accuracy = $acc"
else
	fail "custom loop: status $status, accuracy '$acc'"; cat "$TMP/loop.out"
fi

# 1c. A restarted coordinator resumes from the latest checkpoint.
CKPT="$TMP/ckpt"
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 --checkpoint-root "$TMP" -- \
	"$CLASSIFIER" --epochs 2 --checkpoint-dir "$CKPT" > "$TMP/first.out" 2>&1
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 --checkpoint-root "$TMP" -- \
	"$CLASSIFIER" --epochs 3 --checkpoint-dir "$CKPT" > "$TMP/second.out" 2>&1
status=$?
# (convergence is checked in 1b; here only that training resumed)
if grep -q '^\[chief 0\] accuracy = ' "$TMP/second.out" &&
	grep -q '^\[chief 0\] Restored step 40 from .*/ckpt$' "$TMP/second.out" &&
	grep -q '^\[chief 0\] Starting at epoch 3/3$' "$TMP/second.out" &&
	grep -q '^\[chief 0\] Epoch 3/3: 20/20 steps' "$TMP/second.out" &&
	! grep -q 'Epoch [12]/3:' "$TMP/second.out"; then
	ok "a restarted coordinator resumes from the latest checkpoint"
else
	fail "resume: status $status"; cat "$TMP/first.out" "$TMP/second.out"
fi
if "$PASCO" checkpoint inspect "$CKPT" > "$TMP/inspect.out" 2>&1 &&
	grep -q '^checkpoint .*/ckpt-60, step 60' "$TMP/inspect.out" &&
	grep -q '^embedding/embeddings f32\[8,16384\], 2 shard(s)' "$TMP/inspect.out"; then
	ok "pasco checkpoint inspect lists the variables"
else
	fail "inspect: $(cat "$TMP/inspect.out")"
fi

# flips one byte in the middle of the biggest tensor of a safetensors file
damage() {
	python3 -c 'import json, struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h.pop("__metadata__", None)
s, t = max((e["data_offsets"] for e in h.values()), key=lambda o: o[1] - o[0])
b[8 + n + (s + t) // 2] ^= 0x10
open(p, "wb").write(b)' "$1"
}

# 1c'. A manifest relabelled as format 1 (no checksums) over a damaged
# tensor: inspect exits 1 saying so; --allow-format-1 reads it, warning.
mkdir -p "$TMP/v1" && cp -r "$CKPT/ckpt-40" "$TMP/v1/" && damage "$TMP/v1/ckpt-40/ps-0.safetensors" &&
	python3 -c 'import json, sys
p = sys.argv[1]
m = json.load(open(p))
m["format"] = "pasco-checkpoint-1"
del m["files"]
json.dump(m, open(p, "w"))' "$TMP/v1/ckpt-40/manifest.json"
"$PASCO" checkpoint inspect "$TMP/v1/ckpt-40" > "$TMP/v1.out" 2>&1
status=$?
"$PASCO" checkpoint inspect --allow-format-1 "$TMP/v1/ckpt-40" > "$TMP/v1allow.out" 2>&1
allowed=$?
if [ "$status" -eq 1 ] && grep -q 'format 1: .*no checksums.*--allow-format-1' "$TMP/v1.out" &&
	[ "$allowed" -eq 0 ] && grep -q '^WARNING: format 1' "$TMP/v1allow.out"; then
	ok "inspect refuses a format 1 checkpoint unless --allow-format-1"
else
	fail "inspect of format 1: status $status, then $allowed"; cat "$TMP/v1.out" "$TMP/v1allow.out"
fi

# 1c''. The newest checkpoint damaged: a restarted coordinator resumes from
# the newest intact one, saying which it skipped.
damage "$CKPT/ckpt-60/ps-0.safetensors"
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 --checkpoint-root "$TMP" -- \
	"$CLASSIFIER" --epochs 4 --checkpoint-dir "$CKPT" > "$TMP/third.out" 2>&1
status=$?
if [ "$status" -eq 0 ] && grep -q 'skipping checkpoint .*/ckpt-60: .*damaged' "$TMP/third.out" &&
	grep -q '^\[chief 0\] Restored step 40 from ' "$TMP/third.out" &&
	grep -q '^\[chief 0\] Epoch 4/4: ' "$TMP/third.out"; then
	ok "a damaged newest checkpoint: resumed from the newest intact one"
else
	fail "resume past a damaged checkpoint: status $status"; cat "$TMP/third.out"
fi

# 1d. Killed mid-training, restarted: it resumes from the latest checkpoint.
KILLED="$TMP/killed"
PASCO_TEST_MARK=$MARK "$PASCO" launch --ps 2 --workers 2 --checkpoint-root "$TMP" -- "$CLASSIFIER" \
	--epochs 1000 --checkpoint-dir "$KILLED" > "$TMP/killed.out" 2>&1 &
launcher=$!
if wait_for 'grep -q "Epoch 3/1000: " "$TMP/killed.out"' 600; then
	kill -KILL "$launcher"
	killed=$((killed + 1))
	wait "$launcher" 2>/dev/null
	no_leftovers
	PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 --checkpoint-root "$TMP" -- \
		"$CLASSIFIER" --epochs 5 --checkpoint-dir "$KILLED" > "$TMP/again.out" 2>&1
	status=$?
	step=$(sed -n 's/.*Restored step \([0-9]*\) from .*/\1/p' "$TMP/again.out")
	if [ -n "$step" ] && [ "$step" -ge 40 ] &&
		grep -q '^\[chief 0\] accuracy = ' "$TMP/again.out"; then
		ok "killed mid-training, restarted from step $step"
	else
		fail "restart after kill: status $status, step '$step'"; cat "$TMP/again.out"
	fi
else
	fail "the long run never reached epoch 2"; cat "$TMP/killed.out"
fi

# 1e. Model.fit with TensorBoard and checkpoints (steps of 200): killed
# mid-training, a restarted chief resumes at the interrupted epoch (fit's
# resume); the event files read back with the independent reader.
FIT="$TMP/fit"
READER="$(dirname "$0")/read_events.py"
PASCO_TEST_MARK=$MARK "$PASCO" launch --ps 2 --workers 2 --checkpoint-root "$TMP" -- "$CLASSIFIER" \
	--epochs 1000 --steps 200 --checkpoint-dir "$FIT/ckpt" --logdir "$FIT/logs" > "$TMP/fit1.out" 2>&1 &
launcher=$!
if wait_for 'grep -q "Epoch 3/1000: 200/200 steps" "$TMP/fit1.out"' 600; then
	kill -KILL "$launcher"
	killed=$((killed + 1))
	wait "$launcher" 2>/dev/null
	no_leftovers
	PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 --checkpoint-root "$TMP" -- \
		"$CLASSIFIER" --epochs 12 --steps 200 --checkpoint-dir "$FIT/ckpt" --logdir "$FIT/logs2" > "$TMP/fit2.out" 2>&1
	status=$?
	start=$(sed -n 's/^\[chief 0\] Starting at epoch \([0-9]*\)\/12$/\1/p' "$TMP/fit2.out")
	if [ "$status" -eq 0 ] && [ -n "$start" ] && [ "$start" -ge 4 ] &&
		grep -q '^\[chief 0\] accuracy = ' "$TMP/fit2.out" &&
		[ -d "$FIT/ckpt/ckpt-2400" ]; then
		ok "fit: killed, a restarted chief resumed at epoch $start (fit's resume)"
	else
		fail "fit resume: status $status, start '$start'"; cat "$TMP/fit1.out" "$TMP/fit2.out"
	fi
	if python3 "$READER" "$FIT"/logs2/train/events.out.tfevents.* > "$TMP/train.json" &&
		python3 "$READER" "$FIT"/logs2/eval/events.out.tfevents.* > "$TMP/eval.json" &&
		grep -q '"file_version": "brain.Event:2"' "$TMP/train.json" &&
		grep -q '"step": 11, "tag": "epoch_loss"' "$TMP/train.json" &&
		grep -q '"tag": "epoch_learning_rate"' "$TMP/train.json" &&
		grep -q '"step": 11, "tag": "epoch_accuracy"' "$TMP/eval.json"; then
		ok "fit: TensorBoard event files under logdir/train and logdir/eval read back"
	else
		fail "fit: event files"; ls -R "$FIT"; cat "$TMP/train.json" "$TMP/eval.json"
	fi
else
	fail "the fit run never reached epoch 3"; cat "$TMP/fit1.out"
fi

# 1e. Sparse logistic regression from TFRecord shards on disk: written by
# make_clicks, read per worker, evaluated exactly once over 8 shards.
if "$MAKE_CLICKS" "$TMP/clicks" --train 100000 --eval 10000 > "$TMP/mk.out" 2>&1 &&
	[ "$(ls "$TMP/clicks" | grep -c '^train-.*\.tfrecord$')" -eq 4 ]; then
	ok "make_clicks wrote 4 training shards"
else
	fail "make_clicks: $(cat "$TMP/mk.out")"
fi
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 -- \
	"$SPARSE_LOGREG" --data "$TMP/clicks" > "$TMP/lr.out" 2>&1
status=$?
if [ "$status" -eq 0 ] &&
	grep -q '^\[chief 0\] evaluated 10000 examples exactly once over 8 shards' "$TMP/lr.out" &&
	grep -q '^\[chief 0\] auc = ' "$TMP/lr.out"; then
	ok "sparse logreg: $(sed -n 's/^\[chief 0\] auc = //p' "$TMP/lr.out")"
else
	fail "sparse logreg: status $status"; cat "$TMP/lr.out"
fi

# 1f. Wide & deep (a functional model) on CSV files made by a known rule:
# accuracy >= 0.85 (a constant guess gets 0.56, the rule itself 0.95; 7
# runs on a 2-core VM gave 0.915 to 0.924, one under load 0.893).
"$WIDE_DEEP" --make-data "$TMP/census" > "$TMP/wdmk.out" 2>&1
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 -- \
	"$WIDE_DEEP" --data "$TMP/census" > "$TMP/wd.out" 2>&1
status=$?
if [ "$status" -eq 0 ] &&
	grep -q '^\[chief 0\] evaluated exactly once over 8 shards: loss = ' "$TMP/wd.out" &&
	grep -q '^\[chief 0\] accuracy = ' "$TMP/wd.out"; then
	ok "wide & deep: accuracy $(sed -n 's/^\[chief 0\] accuracy = //p' "$TMP/wd.out")"
else
	fail "wide & deep: status $status"; cat "$TMP/wdmk.out" "$TMP/wd.out"
fi

# 1g. The MLP of a CSV table (make_table: 64 features, 10 classes) with
# fit, validation, checkpoints and TensorBoard: accuracy >= 0.9 (chance is
# 0.1), a checkpoint each epoch, event files.
mkdir -p "$TMP/table"
"$MAKE_TABLE" "$TMP/table" > "$TMP/mktable.out" 2>&1
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 -- \
	"$MLP_CSV" "$TMP/table" > "$TMP/mlp.out" 2>&1
status=$?
acc=$(sed -n 's/^\[chief 0\] Epoch 5\/5: .*, val_accuracy \([0-9.e+-]*\)$/\1/p' "$TMP/mlp.out")
if [ "$status" -eq 0 ] && awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.9) }' &&
	[ -d "$TMP/table/ckpt-500" ] && ls "$TMP/table/train" | grep -q tfevents &&
	ls "$TMP/table/eval" | grep -q tfevents; then
	ok "mlp_csv: val_accuracy $acc, checkpoints and event files"
else
	fail "mlp_csv: status $status, accuracy '$acc'"; cat "$TMP/mktable.out" "$TMP/mlp.out"; ls -R "$TMP/table" | head -30
fi

# 2. Ctrl-C stops everything and reports the interruption.
PASCO_TEST_MARK=$MARK "$PASCO" launch --ps 1 --workers 2 -- "$EXAMPLE" \
	--epochs 1000000 > "$TMP/int.out" 2>&1 &
launcher=$!
if wait_for 'grep -q "epoch 1:" "$TMP/int.out"' 300; then
	kill -INT "$launcher"
	if wait_for '! kill -0 $launcher 2>/dev/null' 150; then
		wait "$launcher"
		status=$?
		if [ "$status" -eq 130 ]; then ok "interrupted launch exits 130"; else fail "interrupted launch exited $status"; fi
	else
		fail "launcher did not stop after SIGINT"
	fi
else
	fail "interrupt run never started training"; cat "$TMP/int.out"
fi
if no_leftovers; then ok "no process left after SIGINT"; else fail "left behind after SIGINT: $(marked)"; fi

# 3. A launcher killed outright takes its tasks with it.
PASCO_TEST_MARK=$MARK "$PASCO" launch --ps 1 --workers 1 -- "$EXAMPLE" \
	--epochs 1000000 > "$TMP/kill.out" 2>&1 &
launcher=$!
if wait_for 'grep -q "epoch 1:" "$TMP/kill.out"' 300; then
	kill -KILL "$launcher"
	killed=$((killed + 1))
	wait "$launcher" 2>/dev/null
	if no_leftovers; then ok "no process left after SIGKILL of the launcher"; else fail "left behind after SIGKILL: $(marked)"; fi
else
	fail "kill run never started training"
fi

# 4. The chief's exit status is the launcher's; bad usage is 2.
PASCO_TEST_MARK=$MARK timeout 30 "$PASCO" launch --ps 1 --workers 1 -- sh -c 'exit 3' > /dev/null 2>&1
status=$?
if [ "$status" -eq 3 ]; then ok "chief status propagates"; else fail "chief status: got $status, want 3"; fi
"$PASCO" launch --workers 0 -- "$EXAMPLE" > /dev/null 2>&1
status=$?
if [ "$status" -eq 2 ]; then ok "bad usage exits 2"; else fail "bad usage exited $status"; fi

# 5. A program started with no cluster says so.
env -u TF_CONFIG "$EXAMPLE" > "$TMP/nocluster.out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -q "no cluster" "$TMP/nocluster.out"; then ok "no cluster: clear error"; else fail "no cluster: status $status: $(cat "$TMP/nocluster.out")"; fi

# 6. --restart: a worker killed mid-run is started again with the same
# TF_CONFIG, and the run completes.
# The victim is looked for at every poll from epoch 3 on (on a loaded
# machine one poll can come after the run's end: 150 epochs of this model
# take a few seconds), and the run is long enough to be caught mid-way.
worker1_task() {
	for p in $(marked); do
		if { tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null |
			grep -q '^TF_CONFIG=.*"task":{"type":"worker","index":1}'; then
			echo "$p"
		fi
	done
}
PASCO_TEST_MARK=$MARK timeout 240 "$PASCO" launch --restart --ps 1 --workers 2 -- \
	"$EXAMPLE" --epochs 400 > "$TMP/restart.out" 2>&1 &
launcher=$!
victim=
wait_for 'grep -q "epoch 3:" "$TMP/restart.out" 2>/dev/null &&
	victim=$(worker1_task) && [ -n "$victim" ]' 600
if [ -n "$victim" ]; then
	kill -9 "$victim"
	wait "$launcher"
	status=$?
	if [ "$status" -eq 0 ] && grep -q '^\[launch\] worker 1 exited (signal 9); restarting$' "$TMP/restart.out" &&
		grep -q '^\[chief 0\] epoch 400: loss = ' "$TMP/restart.out"; then
		ok "--restart: worker 1 killed and restarted; the run completed"
	else
		fail "--restart: status $status"; cat "$TMP/restart.out"
	fi
else
	fail "--restart: no worker 1 found to kill"; cat "$TMP/restart.out"
	wait "$launcher"
fi
if no_leftovers; then ok "no process left after --restart"; else fail "left behind after --restart: $(marked)"; fi

# 6b. ps recovery in the example: with a checkpoint directory, ps 1 is
# SIGKILLed twice mid-run and started again at its address (as an
# orchestrator would); each time it is restored from the latest checkpoint,
# no step is lost (the chief fetches every step's loss) and the run ends
# well.
ps1_task() {
	for p in $(marked); do
		if { tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null |
			grep -q '^TF_CONFIG=.*"task":{"type":"ps","index":1}'; then
			echo "$p"
		fi
	done
}
env_of() { { tr '\0' '\n' < "/proc/$1/environ"; } 2>/dev/null | sed -n "s/^$2=//p"; }
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --ps 2 --workers 2 --checkpoint-root "$TMP/rec" -- \
	"$EXAMPLE" --epochs 100 --checkpoint-dir "$TMP/rec/ckpt" > "$TMP/rec.out" 2>&1 &
launcher=$!
kills=0
for at in 20 50; do
	wait_for "grep -q '^\[chief 0\] epoch $at:' '$TMP/rec.out'" 600 || break
	victim=$(ps1_task)
	[ -n "$victim" ] || break
	tf=$(env_of "$victim" TF_CONFIG)
	key=$(env_of "$victim" PASCO_KEY_FILE)
	root=$(env_of "$victim" PASCO_CHECKPOINT_DIR)
	kill -9 "$victim"
	# gone, or a zombie: its port is free
	wait_for "[ ! -e /proc/$victim ] || grep -q '^State:.*Z' /proc/$victim/status 2>/dev/null" 100
	PASCO_TEST_MARK=$MARK TF_CONFIG=$tf PASCO_KEY_FILE=$key PASCO_CHECKPOINT_DIR=$root \
		"$EXAMPLE" >> "$TMP/rec-ps.out" 2>&1 &
	kills=$((kills + 1))
done
wait "$launcher"
status=$?
restored=$(grep -c 'ps 1 at .* came back as a new process: restored from checkpoint' "$TMP/rec.out")
if [ "$status" -eq 0 ] && [ "$kills" -eq 2 ] && [ "$restored" -eq 2 ] &&
	grep -q '^\[chief 0\] epoch 100: loss = ' "$TMP/rec.out" &&
	grep -q '^\[chief 0\] w = 0.8000$' "$TMP/rec.out" && grep -q '^\[chief 0\] b = 1.0000$' "$TMP/rec.out"; then
	ok "ps recovery: ps 1 killed twice and restored; every step ran and the run converged"
else
	fail "ps recovery: status $status, $kills kills, $restored restores"; grep -v ' epoch [0-9]*: loss' "$TMP/rec.out"
	echo "the restarted ps 1 processes' output:"
	tail -n 30 "$TMP/rec-ps.out" 2> /dev/null
fi
for p in $(ps1_task); do kill -9 "$p"; done
if no_leftovers; then ok "no process left after the ps recovery run"; else fail "left behind after the ps recovery run: $(marked)"; fi

# 7. --evaluator: one more task, of type evaluator, in every TF_CONFIG; it
# runs the program's chief function, which has nothing to evaluate without
# a checkpoint directory.
PASCO_TEST_MARK=$MARK timeout 60 "$PASCO" launch --evaluator --ps 1 --workers 1 -- \
	"$EXAMPLE" > "$TMP/eval.out" 2>&1
status=$?
if [ "$status" -eq 0 ] &&
	grep -q '^\[evaluator 0\] evaluator: nothing to evaluate without --checkpoint-dir$' "$TMP/eval.out" &&
	! grep -q '^\[launch\] evaluator' "$TMP/eval.out"; then
	ok "--evaluator: the evaluator task starts and exits 0"
else
	fail "--evaluator: status $status"; cat "$TMP/eval.out"
fi
# With checkpoints, a sidecar evaluator: one JSON line per checkpoint, in
# step order, the loss going down; eval scalars read back by the
# independent reader; it ends after the chief's final checkpoint, and the
# launch waits for it.
PASCO_TEST_MARK=$MARK timeout 120 "$PASCO" launch --evaluator --ps 2 --workers 2 \
	--checkpoint-root "$TMP/lr" -- "$EXAMPLE" --epochs 12 --checkpoint-dir "$TMP/lr/ckpt" \
	--logdir "$TMP/lr/logs" > "$TMP/sidecar.out" 2>&1
status=$?
steps=$(sed -n 's/^\[evaluator 0\] {"checkpoint":"[^"]*\/ckpt-[0-9]*","step":\([0-9]*\),"loss":[^,]*,"mae":[^,]*,"examples":4096}$/\1/p' "$TMP/sidecar.out" | tr '\n' ' ')
losses=$(sed -n 's/^\[evaluator 0\] {.*"loss":\([^,]*\),.*/\1/p' "$TMP/sidecar.out")
scalars=$(python3 "$(dirname "$0")/read_events.py" "$TMP"/lr/logs/eval/events.out.tfevents.* 2>&1 |
	python3 -c 'import json, sys; d = json.load(sys.stdin); print(" ".join("%s@%d" % (s["tag"], s["step"]) for s in d["scalars"]))' 2>&1)
if [ "$status" -eq 0 ] &&
	[ "$steps" = "100 200 300 400 500 600 700 800 900 1000 1100 1200 " ] &&
	python3 -c 'import sys; l = [float(x) for x in sys.argv[1:]]; sys.exit(0 if l[-1] < l[0] / 100 else 1)' $losses &&
	[ "$(echo "$scalars" | wc -w)" -eq 24 ] && echo "$scalars" | grep -q 'loss@1200 mae@1200$' &&
	tail -n 1 "$TMP/sidecar.out" | grep -q '^\[evaluator 0\] evaluator: evaluated 12 checkpoints, the last at step 1200$'; then
	ok "--evaluator: the sidecar evaluator reports each of 12 checkpoints once and ends after the last"
else
	fail "--evaluator sidecar: status $status, steps '$steps', scalars '$scalars'"; cat "$TMP/sidecar.out"
fi
PASCO_TEST_MARK=$MARK timeout 60 "$PASCO" launch --evaluator --ps 1 --workers 1 -- \
	sh -c 'echo "$TF_CONFIG"; sleep 1' > "$TMP/evalcfg.out" 2>&1 # the chief waits for the rest
if grep -q '^\[evaluator 0\] {"cluster":{"ps":\[[^]]*\],"worker":\[[^]]*\],"evaluator":\["127.0.0.1:[0-9]*"\],"chief":\[[^]]*\]},"task":{"type":"evaluator","index":0}}$' "$TMP/evalcfg.out"; then
	ok "--evaluator: TF_CONFIG names the evaluator job and task"
else
	fail "--evaluator TF_CONFIG: $(cat "$TMP/evalcfg.out")"
fi

# 8. Lines arrive whole and in order: stdout (line-buffered in a pipe) and
# stderr interleaved by one task keep their order; a long line is one line.
PASCO_TEST_MARK=$MARK timeout 60 "$PASCO" launch --ps 1 --workers 1 -- \
	sh -c 'if [ "${TF_CONFIG#*\"type\":\"chief\"}" != "$TF_CONFIG" ]; then
		for i in 1 2 3; do echo "out $i"; echo "err $i" >&2; done
		head -c 20000 /dev/zero | tr "\0" x; echo; fi' > "$TMP/order.out" 2>&1
if [ "$(grep '^\[chief 0\] \(out\|err\)' "$TMP/order.out" | tr '\n' ' ')" = "[chief 0] out 1 [chief 0] err 1 [chief 0] out 2 [chief 0] err 2 [chief 0] out 3 [chief 0] err 3 " ] &&
	[ "$(grep -c '^\[chief 0\] x\{20000\}$' "$TMP/order.out")" -eq 1 ]; then
	ok "task output arrives whole lines, in order"
else
	fail "line order: $(cut -c1-80 "$TMP/order.out")"
fi

# 9. The cluster has a key of its own: every task is given a private key
# file of 32 bytes (so none warns that the cluster is open), and the file
# is gone when the launch ends.
if grep -q "open to anyone" "$TMP/run.out"; then
	fail "a task of a launched cluster ran without a key: $(grep "open to anyone" "$TMP/run.out" | head -1)"
else
	ok "no task of a launched cluster runs without a key"
fi
PASCO_TEST_MARK=$MARK timeout 60 "$PASCO" launch --ps 1 --workers 1 -- \
	sh -c 'if [ "${TF_CONFIG#*\"type\":\"chief\"}" != "$TF_CONFIG" ]; then
		echo "key $PASCO_KEY_FILE $(stat -c %a "$PASCO_KEY_FILE") $(wc -c < "$PASCO_KEY_FILE")"; fi' > "$TMP/key.out" 2>&1
set -- $(sed -n 's/^\[chief 0\] key //p' "$TMP/key.out")
if [ "$#" -eq 3 ] && [ "$2" = 600 ] && [ "$3" -eq 32 ] && [ ! -e "$1" ]; then
	ok "each launch makes a private 32-byte key and removes it at the end"
else
	fail "launch key: $(cat "$TMP/key.out")"
fi
keys=$(find "$TMP" -maxdepth 1 -name 'pasco-key-*' | wc -l)
if [ "$keys" -le "$killed" ]; then
	ok "every launcher that ended removed its key file ($keys left by the $killed killed with SIGKILL)"
else
	fail "$keys key files left in TMPDIR, only $killed launchers were killed with SIGKILL"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
