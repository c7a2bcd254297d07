#!/usr/bin/env bash
# A one-node Slurm cluster on this host, for the Slurm tests (issue 17): this host is the controller and the
# only node. Idempotent; every file it makes lives in one state directory, which `down` removes.
#
#   scripts/slurm_cluster.sh up       install slurm-wlm + munge if missing, write the config, start munged,
#                                     slurmctld and slurmd, wait until `sinfo` shows the node idle
#   scripts/slurm_cluster.sh down     cancel jobs, stop the daemons this script started, remove what `up` made
#   scripts/slurm_cluster.sh down --purge   also remove the Debian packages that `up` installed (none if they
#                                     were there before): the machine as it was, sbatch no longer on PATH
#   scripts/slurm_cluster.sh status   exit 0 when up and the node usable, 3 when down
#   scripts/slurm_cluster.sh env      print SLURM_CONF=<path> (export it when /etc/slurm/slurm.conf is not ours)
#
# Exit codes: 0 done; 77 this machine cannot run it (not root, packages not installable, no slurm), one line
# on stderr saying why (tests skip with it); 3 `status`: not up; 1 a daemon failed (its log tail is printed).
#
# Environment: NEURONEXP_SLURM_DIR (state, default /var/lib/neuronexp-slurm), NEURONEXP_SLURM_PARTITION
# (debug), NEURONEXP_SLURM_TASK_PLUGIN (task/affinity), NEURONEXP_SLURM_TIMEOUT (seconds to wait for the
# node, 60), NEURONEXP_SLURM_PORTS (controller and node ports, "6817 6818").
#
# Made for containers: no systemd (the daemons are started directly, as root), no cgroups
# (proctrack/linuxproc), a private munged on its own socket and key (a system munge, if any, is left alone),
# no accounting storage (so `sacct` fails, as on many small clusters).
set -uo pipefail

STATE=${NEURONEXP_SLURM_DIR:-/var/lib/neuronexp-slurm}
PARTITION=${NEURONEXP_SLURM_PARTITION:-debug}
TASK_PLUGIN=${NEURONEXP_SLURM_TASK_PLUGIN:-task/affinity}
WAIT_S=${NEURONEXP_SLURM_TIMEOUT:-60}
read -r CTLD_PORT SLURMD_PORT <<<"${NEURONEXP_SLURM_PORTS:-6817 6818}"
CONF=$STATE/slurm.conf
MARK=$STATE/.made-by-neuronexp       # only a directory holding this is ever removed
# The packages `up` installed (for `down --purge`): next to the state directory, which `down` removes.
INSTALLED=$STATE.installed-packages
SYSTEM_CONF=/etc/slurm/slurm.conf    # where sbatch, sinfo, ... look when SLURM_CONF is not set
export SLURM_CONF=$CONF

say() { echo "slurm_cluster: $*" >&2; }
skip() { echo "slurm_cluster: cannot run here: $*" >&2; exit 77; }
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root (starts munged, slurmctld and slurmd as root)"; }

# A pid from our pid file, when that process is alive and is the named daemon.
live_pid() {
    local file=$1 name=$2 pid
    [ -s "$file" ] || return 1
    pid=$(cat "$file" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$name" ] || return 1
    echo "$pid"
}

node_state() { timeout 10 sinfo -h -N -p "$PARTITION" -o '%T' 2>/dev/null | head -1; }

install_packages() {
    local missing=()
    for cmd in munged slurmctld slurmd sbatch sinfo scancel; do command -v "$cmd" >/dev/null || missing+=("$cmd"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || skip "no ${missing[*]} and no apt-get to install slurm-wlm and munge"
    say "installing slurm-wlm and munge (missing: ${missing[*]})"
    local log=/tmp/neuronexp-slurm-apt.$$.log before
    before=$(dpkg-query -W -f '${Package}\n' 2>/dev/null | sort)
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >"$log" 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$log" 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >>"$log" 2>&1 \
            || skip "apt-get install slurm-wlm munge failed: $(grep -v '^\s*$' "$log" | tail -1)"
    fi
    rm -f "$log"
    # Exactly what this install added, dependencies included (not `apt-get autoremove`: that would also
    # take packages someone else left orphaned).
    comm -13 <(echo "$before") <(dpkg-query -W -f '${Package}\n' 2>/dev/null | sort) >>"$INSTALLED"
    for cmd in munged slurmctld slurmd sbatch sinfo; do
        command -v "$cmd" >/dev/null || skip "slurm-wlm/munge installed but $cmd is not on PATH"
    done
}

write_config() {
    local host node cpus_line
    host=$(hostname -s)
    # The node as slurmd sees it (CPUs, sockets, cores, threads, RealMemory): a node declared larger than
    # the machine would be drained as INVALID.
    cpus_line=$(slurmd -C 2>/dev/null | head -1)
    [[ $cpus_line == NodeName=* ]] || skip "slurmd -C cannot read this machine's hardware"
    node=${cpus_line#NodeName=* }
    mkdir -p "$STATE"/{munge,ctld,spool,log,run}
    touch "$MARK"
    # The key stays root's; the socket (in run/) and the config are for every user of the machine.
    chmod 0700 "$STATE/munge"
    chmod 0755 "$STATE" "$STATE/run"
    if [ ! -s "$STATE/munge/munge.key" ]; then
        (umask 077; head -c 1024 /dev/urandom >"$STATE/munge/munge.key")
        chmod 0400 "$STATE/munge/munge.key"
    fi
    cat >"$CONF.tmp" <<EOF
# Written by neuronexp scripts/slurm_cluster.sh: a one-node test cluster; \`slurm_cluster.sh down\` removes it.
ClusterName=neuronexp
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/run/munge.socket
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No systemd, no cgroups in a container: processes tracked through their parent pids.
ProctrackType=proctrack/linuxproc
TaskPlugin=$TASK_PLUGIN
JobAcctGatherType=jobacct_gather/none
# No accounting storage (no slurmdbd): sacct fails, as on many small clusters.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
# Cores are consumable, memory is not: jobs share the node the way Slurm packs array tasks on a real one.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# Shorter than Slurm's defaults (30 s, 300 s) so that cancels and timeouts end quickly in tests.
KillWait=5
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 $node State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$CONF.tmp" "$CONF"
    # sbatch and friends read /etc/slurm/slurm.conf unless SLURM_CONF says otherwise: link ours there when
    # that path is free, so that a plain `neuronexp ... hydra/launcher=slurm` finds this cluster.
    if [ ! -e "$SYSTEM_CONF" ] && [ ! -L "$SYSTEM_CONF" ]; then
        if [ ! -d "$(dirname "$SYSTEM_CONF")" ]; then
            mkdir -p "$(dirname "$SYSTEM_CONF")" && dirname "$SYSTEM_CONF" >"$STATE/made-dir"
        fi
        ln -s "$CONF" "$SYSTEM_CONF" && echo "$SYSTEM_CONF" >"$STATE/linked-conf"
    fi
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_daemons() {
    if ! live_pid "$STATE/run/munged.pid" munged >/dev/null; then
        munged --force --key-file="$STATE/munge/munge.key" --socket="$STATE/run/munge.socket" \
            --pid-file="$STATE/run/munged.pid" --log-file="$STATE/log/munged.log" \
            --seed-file="$STATE/munge/munged.seed" || fail munged "$STATE/log/munged.log"
    fi
    if ! live_pid "$STATE/run/slurmctld.pid" slurmctld >/dev/null; then
        port_free "$CTLD_PORT" || skip "port $CTLD_PORT is taken (another slurmctld?); set NEURONEXP_SLURM_PORTS"
        slurmctld -f "$CONF" || fail slurmctld "$STATE/log/slurmctld.log"
    fi
    if ! live_pid "$STATE/run/slurmd.pid" slurmd >/dev/null; then
        port_free "$SLURMD_PORT" || skip "port $SLURMD_PORT is taken (another slurmd?); set NEURONEXP_SLURM_PORTS"
        slurmd -f "$CONF" || fail slurmd "$STATE/log/slurmd.log"
    fi
}

fail() {
    say "$1 did not start; the end of $2:"
    tail -n 15 "$2" >&2 2>/dev/null
    exit 1
}

wait_idle() {
    local deadline=$((SECONDS + WAIT_S)) state
    while :; do
        state=$(node_state)
        case $state in
            idle|mixed|allocated) return 0 ;;
            drain*|down*|fail*|inval*)
                # ReturnToService=2 brings a node back once it registers; an old DOWN state is cleared here.
                scontrol update NodeName="$(hostname -s)" State=RESUME >/dev/null 2>&1 ;;
        esac
        if [ $SECONDS -ge $deadline ]; then
            say "the node is not idle after ${WAIT_S}s (state: ${state:-no answer}); the end of slurmctld.log and slurmd.log:"
            tail -n 8 "$STATE/log/slurmctld.log" "$STATE/log/slurmd.log" >&2 2>/dev/null
            exit 1
        fi
        sleep 0.5
    done
}

# slurmstepd processes of this cluster: they inherit slurmd's log file, which lives in our state directory.
our_stepds() {
    local pid fd
    for pid in $(pgrep -x slurmstepd 2>/dev/null); do
        for fd in /proc/"$pid"/fd/*; do
            if [[ $(readlink "$fd" 2>/dev/null) == "$STATE"/* ]]; then echo "$pid"; break; fi
        done
    done
}

stop_pid() {  # stop_pid <pidfile> <name>: TERM, then KILL after 10 s
    local pid
    pid=$(live_pid "$1" "$2") || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do [ -d "/proc/$pid" ] || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
}

cmd_up() {
    need_root
    install_packages
    if [ -f "$MARK" ] && live_pid "$STATE/run/slurmctld.pid" slurmctld >/dev/null \
        && live_pid "$STATE/run/slurmd.pid" slurmd >/dev/null && live_pid "$STATE/run/munged.pid" munged >/dev/null \
        && [[ $(node_state) =~ ^(idle|mixed|allocated)$ ]]; then
        say "already up ($(sinfo -h -N -o '%N %c CPUs %m MB, %T' | head -1))"
        return 0
    fi
    local started=$SECONDS
    write_config
    start_daemons
    wait_idle
    say "up in $((SECONDS - started))s: partition $PARTITION, node $(sinfo -h -N -o '%N %c CPUs %m MB %T' | head -1), state in $STATE"
    [ -f "$STATE/linked-conf" ] || [ "$(readlink "$SYSTEM_CONF" 2>/dev/null)" = "$CONF" ] \
        || say "note: $SYSTEM_CONF belongs to another Slurm; export SLURM_CONF=$CONF to use this one"
}

purge_packages() {
    [ -s "$INSTALLED" ] || { say "no packages to remove (up installed none)"; return 0; }
    say "removing the packages up installed: $(wc -l <"$INSTALLED") (slurm-wlm, munge and their dependencies)"
    # shellcheck disable=SC2046
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $(sort -u "$INSTALLED") >/dev/null 2>&1 \
        || { say "apt-get purge failed; the list stays in $INSTALLED"; return 1; }
    rm -f "$INSTALLED"
}

cmd_down() {
    need_root
    local purge=0
    [ "${1:-}" = --purge ] && purge=1
    if [ ! -f "$MARK" ]; then
        say "not up (no $STATE)"
        [ $purge -eq 1 ] && purge_packages
        return 0
    fi
    if live_pid "$STATE/run/slurmctld.pid" slurmctld >/dev/null; then
        timeout 10 scancel --full --quiet --user=root >/dev/null 2>&1
        timeout 10 scancel --full --quiet >/dev/null 2>&1 || true
        for _ in $(seq 40); do [ -z "$(timeout 5 squeue -h -t R,CG,PD 2>/dev/null)" ] && break; sleep 0.25; done
    fi
    stop_pid "$STATE/run/slurmd.pid" slurmd
    stop_pid "$STATE/run/slurmctld.pid" slurmctld
    local pid
    for pid in $(our_stepds); do kill -KILL "$pid" 2>/dev/null; done
    stop_pid "$STATE/run/munged.pid" munged
    if [ -f "$STATE/linked-conf" ] && [ "$(readlink "$SYSTEM_CONF")" = "$CONF" ]; then rm -f "$SYSTEM_CONF"; fi
    if [ -f "$STATE/made-dir" ]; then rmdir "$(cat "$STATE/made-dir")" 2>/dev/null; fi  # only if still empty
    rm -rf "$STATE"
    say "down (daemons stopped, $STATE removed)"
    [ $purge -eq 1 ] && purge_packages
    return 0
}

cmd_status() {
    local name file pid up=1
    [ -f "$MARK" ] || { echo "down (no $STATE)"; return 3; }
    for name in munged slurmctld slurmd; do
        file=$STATE/run/$name.pid
        if pid=$(live_pid "$file" $name); then echo "$name: running (pid $pid)"; else echo "$name: not running"; up=0; fi
    done
    [ $up -eq 1 ] && sinfo -N -o '%P %N %c %m %T' && [[ $(node_state) =~ ^(idle|mixed|allocated)$ ]] && return 0
    return 3
}

case ${1:-} in
    up) cmd_up ;;
    down) cmd_down "${2:-}" ;;
    status) cmd_status ;;
    env) echo "SLURM_CONF=$CONF" ;;
    *) echo "usage: $0 up | down [--purge] | status | env" >&2; exit 2 ;;
esac
