#!/bin/bash
# Issue 35's 16-core measurements (README "On 16 cores"). On a many-core host, after
# `ninja -C build`: `bash bench/run16.sh` from the checkout (its tables also go to $OUT,
# bench/results/run16 unless set). On the project's lent device machine: after
# `ninja -C build && ../shared/device/pack.sh`, copy this file into .devcarry/ and run
# `bash .devcarry/run16.sh` there (the packed build and its libraries are beside it).
set -u
D=$(cd "$(dirname "$0")" && pwd)
if [ -d "$D/pasco" ]; then # packed: .devcarry/pasco and .devcarry/lib
	cd "$D/pasco"
	export LD_LIBRARY_PATH=$PWD/build:$D/lib
else # bench/ of a checkout
	cd "$D/.."
fi
OUT=${OUT:-bench/results/run16}
mkdir -p "$OUT"
P=build/pasco
T0=$(date +%s); el() { echo "### [t=$(( $(date +%s) - T0 ))s] $*"; }
chief() { sed -n 's/^\[chief 0\] //p' | grep -v '^{'; }
{ nproc; lscpu | grep -E "Model name|Core|Socket"; head -2 /etc/os-release; ldd $P build/libpasco.so | grep "not found"; } 2>&1 | tee $OUT/env.txt
el "threads per role"
$P launch --ps 1 --workers 1 -- build/examples/embedding_classifier --epochs 3 > /dev/null 2>&1 &
sleep 3; for p in $(pgrep -f 'build/examples/embedding_classifier' || true); do
	echo "$(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-70) threads=$(ls /proc/$p/task | wc -l) names: $(cat /proc/$p/task/*/comm | sort | uniq -c | tr -s ' ' | tr '\n' ';')"; done | tee $OUT/threads.txt
wait
for ps in 1 4; do
	el "train, 12 workers, variables over $ps ps"
	timeout 80 $P launch --ps 4 --workers 12 -- build/bench/train --steps 2000 --ps $ps 2>&1 | chief | tee -a $OUT/train.txt
done
el "dispatch: the chief's cost, 1 worker against 12 (in one run)"
timeout 120 $P launch --ps 1 --workers 12 -- build/bench/dispatch --n 20000 --chief-cost 2>&1 | chief | tee -a $OUT/dispatch.txt
el "scale: 1..12 workers, 2 ps"
timeout 120 $P launch --ps 2 --workers 12 -- build/bench/scale --n 10000 --steps 500 --cost 10000 2>&1 | chief | tee $OUT/scale.txt
el "step cost, 1 worker, 1/2/4 ps"
timeout 50 $P launch --ps 4 --workers 1 -- build/bench/step_cost --steps 1500 2>&1 | chief | tee $OUT/step_cost.txt
el "PyTorch RPC peer"
PYTHONUNBUFFERED=1 GLOG_minloglevel=2 timeout 110 python3 bench/peers/torch_rpc.py --workers 1,2,4,8,12 2>/dev/null | grep -v '^{' | tee $OUT/torch.txt
el done
