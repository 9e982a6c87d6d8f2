#!/bin/bash
# deploy/kubernetes with real containers (podman): the image of
# deploy/kubernetes/Dockerfile built offline from local Debian 12 bases
# (debootstrap --variant=minbase bookworm, imported with `podman import`:
# one with the build packages for the build stage, one with the runtime
# packages for the image, so no stage needs a network), then the TFJob of
# deploy/kubernetes/tfjob.yaml emulated: its five pods as containers named
# and addressed as the operator names them (pasco-tutorial-<type>-<i>.
# default.svc:2222, on a podman network of their own), each with the
# TF_CONFIG the operator writes, the image's entrypoint and the manifest's
# args, its cluster key copied by the manifest's init container command, and
# the manifest's restartPolicy OnFailure played by this script (a container
# that exits non-zero is started again, as the kubelet restarts it in its
# pod; one that exits 0 stays down). Every container runs as Pod Security
# "restricted" has it (the manifest's securityContext, checked here too):
# user 10001, no capabilities, no privilege escalation, seccomp. Scenarios:
#  0. the image: built offline, non-root, apt leaves no cache in a layer;
#  1. the manifest's job: the chief ends with accuracy and 0, every ps and
#     worker exits 0;
#  2. a worker killed mid-training (SIGKILL): restarted, taken back by the
#     chief (worker 1 is up again), training ends;
#  3. a ps killed mid-training: the chief fails (the manifest keeps no
#     checkpoint), is restarted, finds its servers (the ps restarted, the
#     others still serving) and trains to the end;
#  4. the chief away for 320 s, longer than Kubernetes takes to evict the
#     pods of a lost node (300 s): a second job of the manifest (pasco-away,
#     on a network of its own) whose chief is stopped (podman stop: SIGTERM
#     through tini, ended at once) mid-training, with a checkpoint volume
#     shared with the ps pods; its ps and workers (the manifest's
#     PASCO_CHIEF_TIMEOUT=0) still serve, never restarted, when it is
#     started again 320 s later; it resumes from its newest checkpoint and
#     ends them with 0. Scenarios 1, 2, 3 and 5 run while it is away;
#  5. a chief written in Python (examples/mlp_csv.py on every replica):
#     it trains, the ps write its checkpoints, every server exits 0.
# Exits 77 (meson's skip), saying why, where containers cannot run here:
# not root, no podman, no runtime that starts a container, no debootstrap
# or no Debian mirror for a base that is not built yet.
# usage: test_containers.sh SOURCE_ROOT [SANITIZE]
# PASCO_CONTAINERS_MIRROR: the Debian mirror for debootstrap.
set -u
src=$(cd "$1" && pwd)
sanitize=${2:-none}
mirror=${PASCO_CONTAINERS_MIRROR:-http://deb.debian.org/debian}
base=localhost/pasco-test-base
image=localhost/pasco-test:tfjob
tutorial=pasco-tutorial # the manifest's job; use_job switches to another
job=$tutorial
away=pasco-away
skip() {
	echo "SKIP: $*"
	exit 77
}
[ "$sanitize" = none ] || skip "a build with -Db_sanitize=$sanitize: the image builds the source itself, so the plain build's run covers it"
[ "$(id -u)" -eq 0 ] || skip "not root: the suite runs rootful podman (rootless needs subuid ranges)"
command -v podman > /dev/null || skip "podman is not installed (apt-get install podman runc debootstrap)"

tmp=$(mktemp -d /var/tmp/pasco-containers.XXXXXX)
started="" # every container started, of either job
nets=""
cleanup() {
	for c in $started; do podman rm -f -t 0 "$c" > /dev/null 2>&1; done
	for n in $nets; do podman network rm -f "$n" > /dev/null 2>&1; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }

# This machine's limits: podman asks for more open files and processes
# than a process without CAP_SYS_RESOURCE may set, so ask for what it has.
cat > "$tmp/containers.conf" << EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=8192:8192"]
[engine]
events_logger = "file"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF=$tmp/containers.conf

# The local bases, made once and kept (podman's storage); each image ID is
# what pins it (the Debian archive of the day it was made). A base's tag
# carries a checksum of its package list, so a list that changes makes a
# new base (the image's stages install nothing: --network none).
make_base() { # NAME PACKAGES: sets $base_<NAME> to the base's image
	local tag
	tag=$1-$(printf %s "$2" | cksum | cut -d' ' -f1)
	eval "base_$1=\$base:\$tag"
	set -- "$tag" "$2"
	if podman image exists "$base:$1"; then return 0; fi
	command -v debootstrap > /dev/null || skip "no base image $base:$1 and no debootstrap to make it"
	echo "making $base:$1 with debootstrap (bookworm, $mirror)"
	if ! debootstrap --variant=minbase --include="$2" bookworm "$tmp/$1" "$mirror" > "$tmp/$1.log" 2>&1; then
		tail -n 5 "$tmp/$1.log"
		skip "debootstrap of bookworm from $mirror failed (no mirror reachable?)"
	fi
	rm -rf "$tmp/$1"/var/cache/apt/archives/*.deb "$tmp/$1"/var/lib/apt/lists/*
	tar -C "$tmp/$1" -c . | podman import --change 'CMD ["/bin/bash"]' \
		--message "debootstrap --variant=minbase bookworm $(date -u +%Y-%m-%d)" - "$base:$1" > /dev/null ||
		skip "podman import of the $1 base failed"
	rm -rf "${tmp:?}/$1"
}
make_base runtime libnng1,liburing2,libprotobuf-c1,libcjson1,libopenblas0-pthread,zlib1g,tini,python3,python3-numpy
make_base build build-essential,meson,ninja-build,pkg-config,cmake,protobuf-c-compiler,libprotobuf-c-dev,libnng-dev,liburing-dev,libcjson-dev,libopenblas-dev,zlib1g-dev

# A runtime that can start a container here: crun (podman's default) needs
# a cgroup layout it accepts; runc where it does not.
runtime=""
for r in crun runc; do
	if command -v "$r" > /dev/null && podman --runtime "$r" run --rm --network none "$base_runtime" true > "$tmp/$r.err" 2>&1; then
		runtime=$r
		break
	fi
done
[ -n "$runtime" ] || skip "no OCI runtime starts a container here: crun: $(tail -n 1 "$tmp/crun.err" 2> /dev/null) runc: $(tail -n 1 "$tmp/runc.err" 2> /dev/null)"
printf '[engine]\nruntime = "%s"\n' "$runtime" >> "$tmp/containers.conf"
sed -i '0,/^\[engine\]$/!{/^\[engine\]$/d}' "$tmp/containers.conf" # one [engine]
echo "runtime $runtime; bases: runtime $(podman image inspect -f '{{.Id}}' "$base_runtime" | cut -c1-12), build $(podman image inspect -f '{{.Id}}' "$base_build" | cut -c1-12)"

# 0. The image, offline (its layers are cached between runs).
t0=$(date +%s)
if podman build --network none --ignorefile "$src/deploy/kubernetes/Dockerfile.dockerignore" \
	-f "$src/deploy/kubernetes/Dockerfile" --build-arg BASE="$base_runtime" \
	--build-arg BUILD_BASE="$base_build" -t "$image" "$src" > "$tmp/build.log" 2>&1; then
	ok "the image builds offline from the local bases ($(($(date +%s) - t0)) s)"
else
	tail -n 20 "$tmp/build.log"
	fail "podman build failed"
	echo "$passed passed, $failed failed"
	exit 1
fi
size=$(podman image inspect -f '{{.Size}}' "$image")
user=$(podman image inspect -f '{{.Config.User}}' "$image")
entry=$(podman image inspect -f '{{join .Config.Entrypoint " "}}' "$image")
tools=$(podman run --rm --network none --entrypoint sh "$image" -c \
	'ldd /usr/local/bin/embedding_classifier /usr/local/bin/pasco | grep -c "not found"; command -v cc gcc cmake meson' 2>&1)
if [ "$size" -lt 300000000 ] && [ "$user" = 10001:10001 ] && [ "$entry" = "/usr/bin/tini --" ] &&
	[ "$tools" = 0 ]; then
	ok "the image: $((size / 1000000)) MB, user $user, entrypoint $entry, every library found, no compiler"
else
	fail "the image: size $size, user '$user', entrypoint '$entry', ldd/compilers: $tools"
fi
# apt's downloads and lists go in the RUN that installs (this suite's bases
# hold every package, so its build installs none: the Dockerfile's text is
# what is checked; on a debootstrap base without them the image kept
# 97 MiB in /var/cache/apt)
apt_runs=$(awk '
	/^[ \t]*#/ { next } # comment lines within a RUN are dropped
	{ cmd = cmd " " $0 }
	/\\[ \t]*$/ { next }
	cmd ~ /^ *RUN / && cmd ~ /apt-get install/ {
		n++
		if (cmd !~ /apt-get clean/ || cmd !~ /rm -rf \/var\/lib\/apt\/lists\/\*/)
			printf " the RUN ending at line %d", NR
	}
	{ cmd = "" }
	END { printf " (%d installing)", n }' "$src/deploy/kubernetes/Dockerfile")
if [ "$apt_runs" = " (2 installing)" ]; then
	ok "the Dockerfile: each RUN that installs packages runs apt-get clean and removes /var/lib/apt/lists$apt_runs"
else
	fail "the Dockerfile leaves apt's cache in a layer: no apt-get clean or rm -rf /var/lib/apt/lists/* in$apt_runs"
fi

# The manifest's lines this emulation plays: a change there fails here.
manifest=$src/deploy/kubernetes/tfjob.yaml
args_line='args: ["embedding_classifier", "--epochs", "5"]'
init_line='command: ["install", "-m", "0600", "/etc/pasco/secret/key", "/run/pasco/key"]'
for want in "$args_line" "$init_line" '- {name: PASCO_KEY_FILE, value: /run/pasco/key}' \
	'restartPolicy: OnFailure' 'containerPort: 2222'; do
	if [ "$(grep -cF -- "$want" "$manifest")" -ne 3 ]; then
		fail "tfjob.yaml no longer has '$want' in each replica spec"
	fi
done
# the PS and Worker specs' (the servers wait for their chief as long as the
# job lives: scenario 4)
timeout_line='- {name: PASCO_CHIEF_TIMEOUT, value: "0"}'
if [ "$(grep -cF -- "$timeout_line" "$manifest")" -ne 2 ]; then
	fail "tfjob.yaml no longer has '$timeout_line' in the PS and Worker specs"
fi
# Pod Security "restricted": every container and init container sets what
# it requires (runAsNonRoot may be the pod's, the rest only a container's;
# each container here sets all four). Block YAML as the manifest writes it:
# a list item "- name:" two columns in from its containers: key.
restricted=$(awk '
	BEGIN { list = -1; sc = -1 }
	function flush() {
		if (item != "" && got != 15)
			printf " %s(%s%s%s%s)", item, (got % 2 < 1 ? " runAsNonRoot: true" : ""),
			    (got % 4 < 2 ? " allowPrivilegeEscalation: false" : ""),
			    (got % 8 < 4 ? " capabilities drop ALL" : ""),
			    (got % 16 < 8 ? " seccompProfile RuntimeDefault" : "")
		item = ""
	}
	{ match($0, /^ */); ind = RLENGTH; line = substr($0, ind + 1) }
	line == "" || line ~ /^#/ { next }
	list >= 0 && ind <= list { flush(); list = -1 }
	ind == 4 && line ~ /^[A-Za-z]+:$/ { replica = substr(line, 1, length(line) - 1) }
	line ~ /^(initContainers|containers):$/ { flush(); list = ind; next }
	list >= 0 && ind == list + 2 && line ~ /^- name: / {
		flush(); n++; got = 0; sc = -1
		item = replica "/" substr(line, 9)
		next
	}
	item != "" && sc >= 0 && ind <= sc { sc = -1 }
	item != "" && ind == list + 4 && line == "securityContext:" { sc = ind; next }
	sc >= 0 && line == "runAsNonRoot: true" { got = got - got % 2 + 1 }
	sc >= 0 && line == "allowPrivilegeEscalation: false" && got % 4 < 2 { got += 2 }
	sc >= 0 && (line ~ /^capabilities: \{ *drop: \[ *"?ALL"? *\] *\}$/ || line ~ /^drop: \[ *"?ALL"? *\]$/) && got % 8 < 4 { got += 4 }
	sc >= 0 && (line ~ /^seccompProfile: \{ *type: RuntimeDefault *\}$/ || line == "type: RuntimeDefault") && got % 16 < 8 { got += 8 }
	END { flush(); printf " (%d containers)", n }' "$manifest")
if [ "$restricted" = " (6 containers)" ]; then
	ok "tfjob.yaml: every container sets runAsNonRoot, no privilege escalation, drops ALL capabilities, seccomp RuntimeDefault$restricted"
else
	fail "tfjob.yaml: not Pod Security restricted, containers lacking:$restricted"
fi

# A job's network: a /24 in 10.0.0.0/8 picked per run, internal (no
# route out); the pods' addresses fixed, as each pod's service name
# resolves to its pod. Two jobs of the manifest (the second, pasco-away,
# is scenario 4's) have a network each; use_job makes one the current job
# of the functions below (pod, state, logs, kubelet, finish).
octet=$(($(date +%s) % 250 + 1))
pods="chief-0 ps-0 ps-1 worker-0 worker-1"
ip_of() {
	case $1 in
	chief-0) echo "$subnet.10" ;; ps-0) echo "$subnet.20" ;; ps-1) echo "$subnet.21" ;;
	worker-0) echo "$subnet.30" ;; worker-1) echo "$subnet.31" ;;
	esac
}
addr() { echo "$job-$1.default.svc:2222"; }
use_job() { # JOB
	local p
	job=$1
	net=pasco-test-$$-$job
	subnet="10.$(($$ % 200 + 30)).$octet"
	[ "$job" != "$away" ] || subnet="10.$(($$ % 200 + 30)).$((octet + 1))"
	hosts=""
	for p in $pods; do hosts="$hosts --add-host $job-$p.default.svc:$(ip_of "$p")"; done
}
for j in "$away" "$job"; do # ends with the manifest's job current
	use_job "$j"
	podman network create --internal --subnet "$subnet.0/24" "$net" > /dev/null 2>&1 ||
		skip "podman network create --internal --subnet $subnet.0/24 failed"
	nets="$nets $net"
done
# the operator's TF_CONFIG (tests/tools/test_tfjob.c checks it byte for byte)
tf_config() { # TYPE INDEX
	printf '{"cluster":{"chief":["%s"],"ps":["%s","%s"],"worker":["%s","%s"]},"task":{"type":"%s","index":%s},"environment":"cloud"}' \
		"$(addr chief-0)" "$(addr ps-0)" "$(addr ps-1)" "$(addr worker-0)" "$(addr worker-1)" "$1" "$2"
}
# The cluster key's Secret (a file root:10001, mode 0440, as a Secret
# volume with fsGroup 10001 is) and, per pod, the emptyDir the init
# container copies it into.
mkdir -p "$tmp/secret"
head -c 32 /dev/urandom > "$tmp/secret/key"
chown -R 0:10001 "$tmp/secret"
chmod 0750 "$tmp/secret"
chmod 0440 "$tmp/secret/key"

# What Pod Security "restricted" makes of every container (the manifest's
# securityContext): the image's user, no capabilities, no privilege
# escalation; podman's default seccomp profile is its RuntimeDefault.
restricted_opts="--user 10001:10001 --cap-drop=all --security-opt no-new-privileges"
# pod SCENARIO TYPE INDEX [ENV=VALUE...] -- ARGS...: creates and starts the
# pod's container (after its init container), named <job>-<type>-<index>.
pod() {
	local sc=$1 type=$2 index=$3 name=$job-$2-$3 envs=""
	shift 3
	while [ "$1" != -- ]; do
		envs="$envs -e $1"
		shift
	done
	shift
	mkdir -p "$tmp/$sc/$name.key"
	chown 0:10001 "$tmp/$sc/$name.key"
	chmod 2770 "$tmp/$sc/$name.key"
	# the init container: the manifest's command, the pod's user and group
	# shellcheck disable=SC2086
	if ! podman run --rm --network none $restricted_opts --entrypoint install \
		-v "$tmp/secret:/etc/pasco/secret:ro" -v "$tmp/$sc/$name.key:/run/pasco" \
		"$image" -m 0600 /etc/pasco/secret/key /run/pasco/key > "$tmp/$sc/$name.init" 2>&1; then
		fail "$sc: $name's init container: $(cat "$tmp/$sc/$name.init")"
		return 1
	fi
	# shellcheck disable=SC2086
	podman run -d --name "$name" --hostname "$name" --network "$net" --ip "$(ip_of "$type-$index")" \
		$hosts $restricted_opts -e TF_CONFIG="$(tf_config "$type" "$index")" \
		-e PASCO_KEY_FILE=/run/pasco/key $envs -v "$tmp/$sc/$name.key:/run/pasco:ro" \
		-v "$tmp/$sc/ckpt:/ckpt" "$image" "$@" > /dev/null 2> "$tmp/$sc/$name.run" ||
		fail "$sc: podman run $name: $(cat "$tmp/$sc/$name.run")"
	case " $started " in *" $name "*) ;; *) started="$started $name" ;; esac
}
state() { podman inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$job-$1" 2> /dev/null; }
logs() { podman logs "$job-$1" 2>&1; }
# The kubelet's OnFailure, until the chief has exited 0 (or UNTIL, a
# command, holds) or DEADLINE (s) passes, with HOLD (a pod) not restarted;
# restarts are counted in $tmp/$sc/restarts (one line each: the pod and
# its exit status).
kubelet() { # SCENARIO DEADLINE [HOLD [UNTIL]]
	local sc=$1 end=$(($(date +%s) + $2)) hold=${3:-} until=${4:-} p s
	while [ "$(date +%s)" -lt "$end" ]; do
		for p in $pods; do
			s=$(state "$p")
			case $s in
			"exited 0") [ "$p" = chief-0 ] && [ -z "$until" ] && return 0 ;;
			exited*)
				[ "$p" = "$hold" ] && continue
				echo "$p ${s#exited }" >> "$tmp/$sc/restarts"
				podman start "$job-$p" > /dev/null 2>&1
				;;
			esac
		done
		[ -n "$until" ] && eval "$until" && return 0
		sleep 0.5
	done
	return 1
}
# waits up to $2 s for a line matching $3 (grep -E) in pod $1's log
wait_log() {
	local i=0
	while [ "$i" -lt $(($2 * 2)) ]; do
		logs "$1" | grep -Eq -- "$3" && return 0
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}
# every pod of the job's end: ps and workers exited 0 after the chief
servers_done() { # SCENARIO
	local p s bad=""
	for p in ps-0 ps-1 worker-0 worker-1; do
		local i=0
		# "stopped": podman's state between the process's exit and its
		# cleanup (then "exited"), with the exit status already known
		while [ "$i" -lt 20 ] && [ "$(state "$p" | cut -d' ' -f1)" = running ]; do
			sleep 0.5
			i=$((i + 1))
		done
		s=$(state "$p")
		case $s in "exited 0" | "stopped 0") s="exited 0" ;; esac
		[ "$s" = "exited 0" ] && logs "$p" | grep -q 'the chief is done; exiting' || bad="$bad $p($s)"
	done
	[ -z "$bad" ] || echo "$bad"
}
finish() { # SCENARIO: removes its pods
	for p in $pods; do podman rm -f -t 0 "$job-$p" > /dev/null 2>&1; done
}
start_job() { # SCENARIO [ENV...] -- ARGS (the chief's); ps and workers get the manifest's args
	local sc=$1
	shift
	mkdir -p "$tmp/$sc/ckpt"
	chown 10001:10001 "$tmp/$sc/ckpt"
	# shellcheck disable=SC2086
	pod "$sc" ps 0 $server_env -- $server_args
	# shellcheck disable=SC2086
	pod "$sc" ps 1 $server_env -- $server_args
	# shellcheck disable=SC2086
	pod "$sc" worker 0 $server_env -- $server_args
	# shellcheck disable=SC2086
	pod "$sc" worker 1 $server_env -- $server_args
	pod "$sc" chief 0 "$@"
}
server_env="PASCO_CHIEF_TIMEOUT=0" # the manifest's PS and Worker env
server_args="embedding_classifier --epochs 5" # the manifest's

# 4, first part. The chief away for 320 s, longer than Kubernetes takes
# to evict a lost node's pods (300 s), in a second job of the manifest
# (pasco-away) that waits while scenarios 1, 2, 3 and 5 run: its chief is
# stopped mid-training (checkpoints on the pods' shared volume, for fit's
# resume) and its servers, with the manifest's PASCO_CHIEF_TIMEOUT=0, are
# left alone (no kubelet plays their restart meanwhile: one that exits
# stays exited).
use_job "$away"
server_env="PASCO_CHIEF_TIMEOUT=0 PASCO_CHECKPOINT_DIR=/ckpt"
start_job away -- embedding_classifier --epochs 20 --steps 50 --checkpoint-dir /ckpt/run
server_env="PASCO_CHIEF_TIMEOUT=0"
away_since=""
if wait_log chief-0 90 '^Epoch 4/20: '; then
	t0=$(date +%s)
	podman stop -t 30 "$job-chief-0" > /dev/null 2>&1
	away_since=$(date +%s)
	took=$((away_since - t0))
	s=$(state chief-0)
	if [ "$took" -lt 10 ] && [ "$s" = "exited 143" ]; then
		ok "chief stopped: SIGTERM through tini ended it in ${took} s (status 143), not at the grace period"
	else
		fail "chief stopped: $s after $took s"
	fi
	away_epochs=$(logs chief-0 | sed -n 's|^Epoch \([0-9]*\)/20: [0-9]*/50 steps in.*|\1|p' | tail -n 1)
	away_started=$(for p in ps-0 ps-1 worker-0 worker-1; do
		podman inspect -f '{{.State.StartedAt}}' "$job-$p"
	done)
else
	fail "chief away: training never started: $(logs chief-0 | tail -n 5)"
fi
use_job "$tutorial"

# 1. The manifest's job as it is.
start_job normal -- embedding_classifier --epochs 5
if kubelet normal 180 && logs chief-0 | grep -q '^accuracy = 1'; then
	ok "normal end: the chief trained the manifest's job: $(logs chief-0 | grep '^accuracy')"
else
	fail "normal end: chief $(state chief-0): $(logs chief-0 | tail -n 5)"
fi
bad=$(servers_done normal)
if [ -z "$bad" ] && [ ! -s "$tmp/normal/restarts" ]; then
	ok "normal end: every ps and worker exited 0 when the chief was done, no restart"
else
	fail "normal end: servers$bad; restarts: $(cat "$tmp/normal/restarts" 2> /dev/null)"
fi
if logs ps-0 | grep -q "serving at tcp://$job-ps-0.default.svc:2222" &&
	! { logs chief-0; logs ps-0; } | grep -q 'no cluster key'; then
	ok "normal end: tasks named as the operator names them, with the cluster key from the Secret"
else
	fail "normal end: $(logs ps-0 | head -n 3)"
fi
finish normal

# 2. A worker killed mid-training.
# (enough epochs that training outlasts the worker's restart and the
# chief's reconnection: about 900 steps/s here, 40,000 steps; 400 and 800
# epochs each ended once before the chief saw worker 1 back, under CI's
# load, where this script's podman polls and the restart take seconds;
# on 2 CPUs shared with 8 builds, at about 400 steps/s, it was at epoch
# 1817 when a 240 s deadline passed: 480 s)
start_job worker -- embedding_classifier --epochs 2000
if wait_log chief-0 60 '^Epoch 4/2000: '; then
	podman kill -s KILL "$job-worker-1" > /dev/null
	if kubelet worker 480 && logs chief-0 | grep -q '^accuracy = ' &&
		logs chief-0 | grep -q 'worker 1 is up (incarnation' &&
		grep -q '^worker-1 137$' "$tmp/worker/restarts"; then
		ok "worker killed: restarted (status 137), taken back (worker 1 is up), training ended"
	else
		fail "worker killed: chief $(state chief-0), restarts $(cat "$tmp/worker/restarts" 2> /dev/null): $(logs chief-0 | grep -E 'worker 1|accuracy|rror' | tail -n 5)"
	fi
	bad=$(servers_done worker)
	[ -z "$bad" ] && ok "worker killed: every ps and worker exited 0 at the end" || fail "worker killed: servers$bad"
else
	fail "worker killed: training never started: $(logs chief-0 | tail -n 5)"
fi
finish worker

# 3. A ps killed mid-training: the chief fails, is restarted, and trains
# again on its servers.
start_job ps -- embedding_classifier --epochs 60
if wait_log chief-0 60 '^Epoch 4/60: '; then
	podman kill -s KILL "$job-ps-1" > /dev/null
	if kubelet ps 300 && logs chief-0 | grep -q '^accuracy = ' &&
		grep -q '^ps-1 137$' "$tmp/ps/restarts" && grep -Eq '^chief-0 [1-9]' "$tmp/ps/restarts"; then
		ok "ps killed: ps restarted, the chief failed ($(grep '^chief-0' "$tmp/ps/restarts" | head -n 1)), was restarted and trained to the end"
	else
		fail "ps killed: chief $(state chief-0), restarts $(cat "$tmp/ps/restarts" 2> /dev/null): $(logs chief-0 | tail -n 5)"
	fi
	bad=$(servers_done ps)
	[ -z "$bad" ] && ok "ps killed: every ps and worker exited 0 at the end" || fail "ps killed: servers$bad"
else
	fail "ps killed: training never started: $(logs chief-0 | tail -n 5)"
fi
finish ps

# 5. A chief written in Python: the manifest's job with every replica's
# args ["python3", "/usr/local/share/pasco/examples/mlp_csv.py", "/ckpt"]
# (the README's Python program; the image has python3, numpy and the
# pasco package), its data made by the image's make_table on the pods'
# shared volume. The chief runs Python; the ps and workers serve in C.
mkdir -p "$tmp/python/ckpt"
chown 10001:10001 "$tmp/python/ckpt"
py_args="python3 /usr/local/share/pasco/examples/mlp_csv.py /ckpt"
# shellcheck disable=SC2086
if podman run --rm --network none $restricted_opts -v "$tmp/python/ckpt:/ckpt" \
	--entrypoint make_table "$image" /ckpt > "$tmp/python/make_table.log" 2>&1; then
	server_env="PASCO_CHIEF_TIMEOUT=0 PASCO_CHECKPOINT_DIR=/ckpt"
	server_args=$py_args
	# shellcheck disable=SC2086
	start_job python -- $py_args
	server_env="PASCO_CHIEF_TIMEOUT=0"
	server_args="embedding_classifier --epochs 5"
	if kubelet python 180 && logs chief-0 | grep -q "^evaluate: {'loss': " &&
		acc=$(logs chief-0 | sed -n 's/^epoch 4: val_accuracy \([0-9.]*\)$/\1/p') &&
		awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.9) }' &&
		[ -f "$tmp/python/ckpt/ckpt-500/manifest.json" ]; then
		ok "python chief: the manifest's job with a Python chief trained (val_accuracy $acc, ckpt-500 written by the ps)"
	else
		fail "python chief: chief $(state chief-0): $(logs chief-0 | tail -n 8)"
	fi
	bad=$(servers_done python)
	[ -z "$bad" ] && ok "python chief: every ps and worker exited 0 at the end" || fail "python chief: servers$bad"
else
	fail "python chief: make_table in the image: $(cat "$tmp/python/make_table.log")"
fi
finish python

# 4, second part. The away job's chief is started again 320 s after it
# stopped: every ps and worker still serves, never restarted (a pod's
# restarts count against the job's backoffLimit), under the restricted
# settings; the chief resumes from its newest checkpoint and ends them.
use_job "$away"
if [ -n "$away_since" ]; then
	gone=""
	while [ "$(date +%s)" -lt $((away_since + 320)) ] && [ -z "$gone" ]; do
		for p in ps-0 ps-1 worker-0 worker-1; do
			[ "$(state "$p" | cut -d' ' -f1)" = running ] || gone="$gone $p($(state "$p"))"
		done
		[ -n "$gone" ] || sleep 1
	done
	now_started=$(for p in ps-0 ps-1 worker-0 worker-1; do
		podman inspect -f '{{.State.StartedAt}}' "$job-$p"
	done)
	if [ -z "$gone" ] && [ "$now_started" = "$away_started" ] &&
		! for p in ps-0 ps-1 worker-0 worker-1; do logs "$p"; done | grep -q 'the chief is gone'; then
		ok "chief away $(($(date +%s) - away_since)) s: every ps and worker still serves, never restarted"
	else
		fail "chief away: servers exited:$gone; ps-0: $(logs ps-0 | tail -n 2)"
	fi
	# what the task (under tini, process 1) runs with
	creds=$(for p in ps-0 ps-1 worker-0 worker-1; do
		podman exec "$job-$p" grep -E '^(Uid|Cap(Prm|Eff|Bnd)|NoNewPrivs|Seccomp):' /proc/1/status |
			tr -s '\t\n' '  '
		echo
	done | sort -u)
	no=0000000000000000
	want="Uid: 10001 10001 10001 10001 CapPrm: $no CapEff: $no CapBnd: $no NoNewPrivs: 1 Seccomp: 2 "
	if [ "$creds" = "$want" ]; then
		ok "chief away: every server runs as 10001 with no capabilities (none to gain), no new privileges and seccomp"
	else
		fail "chief away: the servers' credentials: '$creds', not '$want'"
	fi
	# the kubelet restarts the chief's container: the same args
	podman start "$job-chief-0" > /dev/null
	if kubelet away 180 && logs chief-0 | grep -q '^accuracy = ' &&
		start=$(logs chief-0 | sed -n 's|^Starting at epoch \([0-9]*\)/.*|\1|p' | head -n 1) &&
		[ "${start:-0}" -ge 4 ] && [ "$start" -le $((away_epochs + 1)) ]; then
		ok "chief back: it resumed from its checkpoint at epoch $start (after $away_epochs) and ended"
	else
		fail "chief back: chief $(state chief-0), start '${start:-}', done $away_epochs: $(logs chief-0 | tail -n 5)"
	fi
	bad=$(servers_done away)
	if [ -z "$bad" ] && [ ! -s "$tmp/away/restarts" ]; then
		ok "chief back: every ps and worker exited 0 at the end, no restart"
	else
		fail "chief back: servers$bad; restarts: $(cat "$tmp/away/restarts" 2> /dev/null)"
	fi
fi
finish away

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
