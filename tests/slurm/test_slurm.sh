#!/bin/sh
# A real one-node Slurm cluster (munged, slurmctld, slurmd from Debian's
# packages, installed with apt-get when missing) in a temporary directory,
# and the linear-regression example run through
# `srun -n4 pasco slurm --ps 1 -- linear_regression`: 1 ps, the chief and 2
# workers, their TF_CONFIG derived from the step's variables. Checks that it
# converged (the chief's w and b, as test_launch.sh does) and that a bad
# use of pasco slurm says which variable is wrong. With the optional
# arguments, the same for a Python chief: examples/mlp_csv.py (every task
# `python3 mlp_csv.py DIR`, the package from SOURCE_ROOT/python and
# LIBPASCO) through srun and through the sbatch script, on make_table's
# data (PASCO_CHECKPOINT_DIR lets its ps write the script's checkpoints
# there); it must train to val_accuracy >= 0.9 (skipped, and said so, when
# PYTHON lacks numpy or the build is sanitized: python3 cannot load a
# sanitized libpasco).
#
# Needs root (it installs packages and runs the daemons as root); skips
# (77) otherwise, or when the packages cannot be installed, or when this
# host's name does not resolve (the tasks listen on it). Our munged has its
# own key and socket, the daemons their own ports, state and spool in the
# temporary directory; every process started here carries PASCO_TEST_MARK
# (slurmstepd and the tasks inherit it) and is killed on exit.
# The machine is left as found: while apt-get installs the packages a
# policy-rc.d keeps their services from starting, and the services the
# install enabled at boot (munge, slurmctld, slurmd) are disabled again;
# the last check asserts that none of them runs or is enabled that did
# not or was not before.
# usage: test_slurm.sh PASCO LINEAR_REGRESSION SBATCH_SCRIPT
#            [PYTHON MAKE_TABLE LIBPASCO SOURCE_ROOT SANITIZE]
set -u
PASCO=$(realpath "$1")
export PASCO
EXAMPLE=$(realpath "$2")
SBATCH_SCRIPT=$(realpath "$3")
PY=${4:-}
MAKE_TABLE=${5:+$(realpath "$5")}
LIBPASCO=${6:+$(realpath "$6")}
SRC=${7:+$(realpath "$7")}
SANITIZE=${8:-none}
MARK="pasco-slurm-test-$$"
export PASCO_TEST_MARK=$MARK
passed=0
failed=0

skip() { echo "SKIP: $1"; exit 77; }
ok() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

[ "$(id -u)" -eq 0 ] || skip "not root: installing slurm-wlm and munge and running slurmd need root"

TMP=$(mktemp -d /tmp/pasco-slurm.XXXXXX)
chmod 700 "$TMP"

# Our processes: those carrying our marker in their environment, and the
# slurmstepd processes (setproctitle overwrites their environment) that
# hold a file in our directory open.
ours() {
	{
		env -u PASCO_TEST_MARK grep -lzx "PASCO_TEST_MARK=$MARK" /proc/[0-9]*/environ 2>/dev/null |
			sed 's,^/proc/\([0-9]*\)/environ$,\1,'
		for p in $(pgrep -x slurmstepd); do
			ls -l "/proc/$p/fd" 2>/dev/null | grep -q "$TMP/" && echo "$p"
		done
	} | while read -r p; do
		# a process already gone, or a zombie waiting for its reaper
		# (PID 1 here is slow), is not left behind
		state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$p/status" 2>/dev/null)
		[ -n "$state" ] && [ "$state" != Z ] && echo "$p"
	done
}

# The packages' services: enabled at boot where systemd or SysV init
# would start them, and running.
SERVICES="munge slurmctld slurmd"
enabled_services() {
	for s in $SERVICES; do
		if ls /etc/systemd/system/*.wants/"$s".service > /dev/null 2>&1 ||
			ls /etc/rc[2345].d/S[0-9][0-9]"$s" > /dev/null 2>&1; then
			echo "$s"
		fi
	done
}
# (not those of a test, this one's or another's: they carry a mark)
running_daemons() {
	for p in $(pgrep -x munged; pgrep -x slurmctld; pgrep -x slurmd); do
		env=$(tr '\0' '\n' 2>/dev/null < "/proc/$p/environ") || continue
		case $env in *PASCO_TEST_MARK=*) ;; *) echo "$p" ;; esac
	done | sort
}
ENABLED_BEFORE=$(enabled_services)
RUNNING_BEFORE=$(running_daemons)
POLICY=/usr/sbin/policy-rc.d
made_policy=""

cleanup() {
	for p in $(ours); do kill -TERM "$p" 2>/dev/null; done
	sleep 0.5
	for p in $(ours); do kill -KILL "$p" 2>/dev/null; done
	[ -z "$made_policy" ] || rm -f "$POLICY"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

need=""
for cmd in munged:munge slurmctld:slurm-wlm slurmd:slurm-wlm srun:slurm-wlm; do
	command -v "${cmd%%:*}" > /dev/null 2>&1 || need="$need ${cmd#*:}"
done
if [ -n "$need" ]; then
	pkgs=$(echo $need | tr ' ' '\n' | sort -u | tr '\n' ' ')
	echo "installing with apt-get: $pkgs"
	install() {
		DEBIAN_FRONTEND=noninteractive timeout 240 apt-get install -y \
			--no-install-recommends $pkgs > "$TMP/apt.log" 2>&1
	}
	# invoke-rc.d asks policy-rc.d; 101: start no service
	if [ ! -e "$POLICY" ]; then
		printf '#!/bin/sh\n# test_slurm.sh: no service starts while it installs\nexit 101\n' > "$POLICY"
		chmod 755 "$POLICY"
		made_policy=1
	fi
	installed=1
	install || { apt-get update > /dev/null 2>&1 && install; } || installed=""
	[ -z "$made_policy" ] || rm -f "$POLICY"
	made_policy=""
	# the packages enable their services at boot (also when the install
	# failed half-way); this test only wanted the programs
	for s in $(enabled_services); do
		case " $(echo $ENABLED_BEFORE) " in *" $s "*) continue ;; esac
		if command -v deb-systemd-helper > /dev/null 2>&1; then
			deb-systemd-helper disable "$s.service" > /dev/null 2>&1
		fi
		if [ -e "/etc/init.d/$s" ]; then
			update-rc.d "$s" disable > /dev/null 2>&1
		fi
		echo "disabled $s at boot (the install enabled it)"
	done
	if [ -z "$installed" ]; then
		tail -5 "$TMP/apt.log"
		skip "apt-get could not install $pkgs: $(tail -1 "$TMP/apt.log")"
	fi
fi
HOST=$(hostname -s)
getent hosts "$HOST" > /dev/null || skip "host name $HOST does not resolve"

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

# n distinct free TCP ports, or a base with n free ports after it (-c)
free_ports() {
	python3 - "$@" << 'EOF'
import socket, sys, random
if sys.argv[1] == "-c":
    n = int(sys.argv[2])
    for _ in range(200):
        base = random.randrange(20000, 60000)
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                s.bind(("", p))
                socks.append(s)
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        print(base)
        break
else:
    socks = [socket.socket() for _ in range(int(sys.argv[1]))]
    for s in socks:
        s.bind(("", 0))
    print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# munge: our own key, socket and daemon.
mkdir -p "$TMP/munge" "$TMP/state" "$TMP/spool"
chmod 700 "$TMP/munge"
dd if=/dev/urandom of="$TMP/munge/munge.key" bs=1024 count=1 2> /dev/null
chmod 400 "$TMP/munge/munge.key"
SOCK="$TMP/munge/munge.socket"
munged --force --socket="$SOCK" --key-file="$TMP/munge/munge.key" \
	--pid-file="$TMP/munge/munged.pid" --log-file="$TMP/munge/munged.log" \
	--seed-file="$TMP/munge/munged.seed" > "$TMP/munged.out" 2>&1 ||
	{ cat "$TMP/munged.out"; skip "munged would not start"; }

set -- $(free_ports 2)
NCPU=$(nproc)
CPUS=$((NCPU > 4 ? NCPU : 4)) # declared: 4 tasks fit on a 2-core machine
export SLURM_CONF="$TMP/slurm.conf"
cat > "$SLURM_CONF" << EOF
ClusterName=pasco-test
SlurmctldHost=$HOST
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/slurmctld.log
SlurmdLogFile=$TMP/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
KillWait=5
NodeName=$HOST CPUs=$CPUS State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
EOF
slurmctld -D -i -f "$SLURM_CONF" > "$TMP/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -f "$SLURM_CONF" > "$TMP/slurmd.out" 2>&1 &
slurmd_pid=$!

if wait_for 'sinfo -h -N -o %t 2>/dev/null | grep -qx idle' 300; then
	ok "slurmctld and slurmd up, node $HOST idle ($CPUS CPUs declared, $NCPU real)"
else
	for f in slurmctld.out slurmctld.log slurmd.out slurmd.log munged.out munge/munged.log; do
		if [ -s "$TMP/$f" ]; then
			echo "--- $f, its last lines:"
			tail -20 "$TMP/$f"
		else
			echo "--- $f: empty or missing"
		fi
	done
	# a daemon this machine cannot run (a container without the rights
	# slurmd needs) is no fault of Pasco's; daemons up but no idle node is
	dead=""
	for d in slurmctld:$ctld_pid slurmd:$slurmd_pid; do
		kill -0 "${d#*:}" 2> /dev/null && continue
		wait "${d#*:}"
		st=$?
		why=$(cat "$TMP/${d%%:*}.out" "$TMP/${d%%:*}.log" 2>/dev/null |
			grep -i -m1 'fatal\|error' | cut -c1-200)
		dead="$dead${dead:+; }${d%%:*} exited with status $st: ${why:-it logged no error}"
	done
	[ -z "$dead" ] || skip "a daemon exited at start on this machine: $dead"
	fail "the node never became idle: $(sinfo -N 2>&1)"
	exit 1
fi

# 1. Outside a step, pasco slurm names what is missing.
env -u SLURM_PROCID "$PASCO" slurm -- true > "$TMP/bad.out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -q 'SLURM_PROCID is not set' "$TMP/bad.out"; then
	ok "outside an allocation: $(cat "$TMP/bad.out")"
else
	fail "outside an allocation: status $status: $(cat "$TMP/bad.out")"
fi

# converged FILE WHAT: the chief (rank 1, srun --label) learnt w = 0.8, b = 1
converged() {
	w=$(sed -n 's/^ *1: w = //p' "$1")
	b=$(sed -n 's/^ *1: b = //p' "$1")
	if awk -v w="$w" -v b="$b" 'BEGIN { d1 = w - 0.8; d2 = b - 1; exit !(w != "" && b != "" && d1 < 0.01 && d1 > -0.01 && d2 < 0.01 && d2 > -0.01) }' &&
		grep -q '^ *1: epoch 20: loss = ' "$1"; then
		ok "$2: learnt w = $w, b = $b"
	else
		fail "$2: learnt w = '$w', b = '$b' (want 0.8 and 1 within 0.01)"
		cat "$1"
	fi
}

# 2. srun -n4: 1 ps, the chief, 2 workers; the step ends with the chief.
BASE=$(free_ports -c 4)
timeout 120 srun -N1 -n4 --kill-on-bad-exit=1 --label "$PASCO" slurm --ps 1 \
	--port-base "$BASE" -- "$EXAMPLE" > "$TMP/srun.out" 2>&1
status=$?
if [ "$status" -eq 0 ]; then ok "srun step exits 0"; else fail "srun step exited $status"; fi
for t in "0: .*ps 0 at $HOST:$BASE" "1: .*chief 0 at $HOST:$((BASE + 1))" \
	"2: .*worker 0 at $HOST:$((BASE + 2))" "3: .*worker 1 at $HOST:$((BASE + 3))"; do
	if grep -q "^ *$t\$" "$TMP/srun.out"; then ok "task ${t%%:*} is ${t#*.\*}"; else fail "no line '$t'"; fi
done
converged "$TMP/srun.out" "srun"

# 3. The deploy script through sbatch, its settings from the environment.
BASE=$(free_ports -c 4)
PROGRAM="$EXAMPLE" PORT_BASE=$BASE timeout 150 sbatch --wait -N1 -n4 \
	--output="$TMP/job.out" "$SBATCH_SCRIPT" --epochs 20 > "$TMP/sbatch.out" 2>&1
status=$?
if [ "$status" -eq 0 ]; then ok "sbatch job exits 0"; else fail "sbatch job exited $status: $(cat "$TMP/sbatch.out")"; fi
converged "$TMP/job.out" "sbatch $(basename "$SBATCH_SCRIPT")"

# trained FILE WHAT: the Python chief (rank 1) printed every epoch's
# val_accuracy, the last >= 0.9, and its evaluate line
trained() {
	acc=$(sed -n 's/^ *1: epoch 4: val_accuracy //p' "$1")
	if awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.9) }' &&
		grep -q "^ *1: evaluate: {'loss': " "$1"; then
		ok "$2: val_accuracy $acc after 5 epochs"
	else
		fail "$2: val_accuracy '$acc' (want >= 0.9 at epoch 4)"
		cat "$1"
	fi
}

# 3b. A Python chief (examples/mlp_csv.py), through srun and sbatch, the
# same way: every task runs the script, the ps and workers serve in C.
if [ -z "$PY" ]; then
	echo "skip: the Python chief: no PYTHON argument"
elif [ "$SANITIZE" != none ]; then
	echo "skip: the Python chief: this build uses -fsanitize=$SANITIZE" \
		"(python3 cannot load its libpasco)"
elif ! "$PY" -c 'import numpy' > /dev/null 2>&1; then
	echo "skip: the Python chief: numpy is not installed for $PY"
else
	# mlp_csv.py checkpoints into DIR: its ps must be given a root
	# (pasco launch gives one; under Slurm the environment does)
	export PYTHONPATH="$SRC/python" PASCO_LIBRARY="$LIBPASCO" \
		PASCO_CHECKPOINT_DIR="$TMP/table"
	"$MAKE_TABLE" "$TMP/table" > /dev/null
	BASE=$(free_ports -c 4)
	timeout 150 srun -N1 -n4 --kill-on-bad-exit=1 --label "$PASCO" slurm \
		--ps 1 --port-base "$BASE" -- "$PY" "$SRC/examples/mlp_csv.py" \
		"$TMP/table" > "$TMP/py-srun.out" 2>&1
	status=$?
	if [ "$status" -eq 0 ]; then ok "python srun step exits 0"; else fail "python srun step exited $status"; fi
	trained "$TMP/py-srun.out" "python srun"
	BASE=$(free_ports -c 4)
	PROGRAM="$PY" PORT_BASE=$BASE timeout 150 sbatch --wait -N1 -n4 \
		--output="$TMP/py-job.out" "$SBATCH_SCRIPT" \
		"$SRC/examples/mlp_csv.py" "$TMP/table" > "$TMP/py-sbatch.out" 2>&1
	status=$?
	if [ "$status" -eq 0 ]; then ok "python sbatch job exits 0"; else fail "python sbatch job exited $status: $(cat "$TMP/py-sbatch.out")"; fi
	trained "$TMP/py-job.out" "python sbatch $(basename "$SBATCH_SCRIPT")"
	unset PYTHONPATH PASCO_LIBRARY PASCO_CHECKPOINT_DIR
fi

# 4. A step too small for the cluster says so, and fails.
timeout 60 srun -N1 -n2 --label "$PASCO" slurm --ps 1 -- "$EXAMPLE" > "$TMP/small.out" 2>&1
status=$?
if [ "$status" -ne 0 ] && grep -q 'the step has 2 tasks; with --ps 1 it needs at least 3' "$TMP/small.out"; then
	ok "srun -n2: refused, status $status"
else
	fail "srun -n2: status $status: $(cat "$TMP/small.out")"
fi

# 5. Stopped, the daemons leave nothing behind. First every job has
# ended (a completing job's slurmstepd, still tearing its step down, kept
# slurmd from stopping within the wait below on a loaded machine).
our_stepds() {
	for p in $(pgrep -x slurmstepd); do
		ls -l "/proc/$p/fd" 2>/dev/null | grep -q "$TMP/" && echo "$p"
	done
}
wait_for '[ -z "$(squeue -h 2>/dev/null)" ] && [ -z "$(our_stepds)" ]' 300 ||
	echo "jobs still listed after 30 s: $(squeue -h 2>&1)"
for f in slurmd.pid slurmctld.pid munge/munged.pid; do
	[ -f "$TMP/$f" ] && kill -TERM "$(cat "$TMP/$f")" 2>/dev/null
done
if wait_for '[ -z "$(ours)" ]' 150; then
	ok "daemons stopped, no process left"
else
	fail "left behind: $(for p in $(ours); do echo "$p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null) ($(sed -n 's/^State:[[:space:]]*//p' /proc/$p/status 2>/dev/null))"; done)"
fi

# 6. The machine as found: no Slurm or munge service runs or starts at
# boot that did not before.
echo "$RUNNING_BEFORE" > "$TMP/running.before"
running_daemons > "$TMP/running.after"
left=$(comm -13 "$TMP/running.before" "$TMP/running.after")
enabled=""
for s in $(enabled_services); do
	case " $(echo $ENABLED_BEFORE) " in *" $s "*) ;; *) enabled="$enabled $s" ;; esac
done
if [ -z "$left$enabled" ] && [ -z "$made_policy" ] && ! grep -qs 'test_slurm.sh' "$POLICY"; then
	ok "no munge or Slurm service left running or enabled at boot"
else
	fail "left behind: running: $(echo $left) enabled at boot:$enabled"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
