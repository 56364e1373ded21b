#!/usr/bin/env bash
# local_slurm.sh - a real single-node Slurm cluster on this (Debian) machine, for the cluster
# tests: munged, MariaDB + slurmdbd (accounting, so `sacct` works), slurmctld and slurmd.
#
#   tests/cluster/local_slurm.sh start [--no-accounting] [--gpus N] [--cpus N] [--mem-mb N]
#   tests/cluster/local_slurm.sh stop [--purge]
#   tests/cluster/local_slurm.sh status        # exit 0 when every daemon is up
#
# start: installs what is missing from Debian (apt-get: slurmctld slurmd slurm-client munge,
#   and slurmdbd mariadb-server unless --no-accounting), writes the configs under
#   $LOCAL_SLURM_DIR, starts only the daemons not already running (their pid files) and
#   waits until node `localhost` is idle. Idempotent: run it again and nothing happens,
#   unless the configuration changed, when the Slurm daemons are restarted.
#   The node advertises --cpus CPUs, --mem-mb MB and --gpus placeholder GPUs (gres `gpu`,
#   type $LOCAL_SLURM_GPU_TYPE, backed by empty files), regardless of the hardware
#   (SlurmdParameters=config_overrides): a workflow's real resource requests (a GPU, 32 GB)
#   schedule on a small machine. Nothing is enforced except memory: a step that uses more
#   than its job asked for is killed (JobAcctGatherParams=OverMemoryKill, with accounting).
#   No CUDA_VISIBLE_DEVICES is set; a job "on a GPU" runs on the CPU.
#   Without accounting `sacct` fails: a Snakemake profile must then set
#   `slurm-status-command: squeue` (MinJobAge here is 600 s).
# stop: cancels the cluster's jobs, then stops the daemons named in its pid files (and only
#   if /proc/PID/comm still matches), and removes the /etc/slurm/slurm.conf symlink if it is
#   ours. --purge also deletes $LOCAL_SLURM_DIR.
#
# Environment (defaults): LOCAL_SLURM_DIR (/tmp/xlsent-local-slurm), LOCAL_SLURM_PARTITION
#   (debug), LOCAL_SLURM_GPU_TYPE (fake), LOCAL_SLURM_PORT (16817: slurmctld; +1 slurmd,
#   +2 slurmdbd), LOCAL_SLURM_DB_PORT (16306, MariaDB on 127.0.0.1).
# Clients find the cluster through SLURM_CONF=$LOCAL_SLURM_DIR/etc/slurm.conf, and through
#   the symlink /etc/slurm/slurm.conf -> that file, which this script creates: Snakemake's
#   jobstep plugin removes every SLURM_* variable (SLURM_CONF too) before its `srun`, which
#   then reads the default path. An /etc/slurm/slurm.conf that is not our symlink is never
#   replaced (start fails instead).
# Must run as root (daemons, apt-get). Outside $LOCAL_SLURM_DIR it touches only Debian
#   packages and that symlink. Exit status 3: the packages are missing and cannot be
#   installed (no apt-get, or it failed); 1: anything else went wrong.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

BASE="${LOCAL_SLURM_DIR:-/tmp/xlsent-local-slurm}"
PARTITION="${LOCAL_SLURM_PARTITION:-debug}"
GPU_TYPE="${LOCAL_SLURM_GPU_TYPE:-fake}"
PORT="${LOCAL_SLURM_PORT:-16817}"
DB_PORT="${LOCAL_SLURM_DB_PORT:-16306}"
CONF="$BASE/etc/slurm.conf"
ETC_LINK=/etc/slurm/slurm.conf
MUNGE_SOCK="$BASE/munge/run/munge.socket.2"
DB_DIR="$BASE/mysql"
export SLURM_CONF="$CONF"

T0=$(date +%s%N)
log() { echo "[local_slurm +$(( ($(date +%s%N) - T0) / 1000000 ))ms] $*"; }
die() { echo "local_slurm: $*" >&2; exit 1; }

# running PIDFILE COMM: the pid in PIDFILE is alive and is the program COMM
running() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}
# stop_pidfile PIDFILE COMM: TERM (then KILL after 20 s) the daemon of that pid file only
stop_pidfile() {
  if ! running "$1" "$2"; then rm -f "$1"; return 0; fi
  local pid
  pid=$(cat "$1")
  log "stopping $2 (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "$2 did not exit: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}
# wait_for SECONDS WHAT CMD...: until CMD succeeds
wait_for() {
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "timed out after ${secs}s waiting for $what (logs: $BASE/log, $DB_DIR)"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

daemons() {  # PIDFILE COMM pairs of what start runs
  echo "$BASE/munge/run/munged.pid munged"
  if grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$CONF" 2>/dev/null; then
    echo "$DB_DIR/mysqld.pid mariadbd"
    echo "$BASE/run/slurmdbd.pid slurmdbd"
  fi
  echo "$BASE/run/slurmctld.pid slurmctld"
  echo "$BASE/run/slurmd.pid slurmd"
}

cmd_status() {
  [ -f "$CONF" ] || { echo "not configured ($CONF missing)"; return 1; }
  local ok=0 pidfile comm
  while read -r pidfile comm; do
    if running "$pidfile" "$comm"; then echo "$comm: running (pid $(cat "$pidfile"))"
    else echo "$comm: not running"; ok=1; fi
  done < <(daemons)
  [ $ok = 0 ] && sinfo -N -o '%P %N %T cpus=%c mem=%m gres=%G' 2>/dev/null
  return $ok
}

install_packages() {
  local pkgs=()
  command -v slurmctld >/dev/null || pkgs+=(slurmctld)
  command -v slurmd >/dev/null || pkgs+=(slurmd)
  command -v sbatch >/dev/null || pkgs+=(slurm-client)
  command -v munged >/dev/null || pkgs+=(munge)
  if [ "$ACCOUNTING" = 1 ]; then
    command -v slurmdbd >/dev/null || pkgs+=(slurmdbd)
    command -v mariadbd >/dev/null || pkgs+=(mariadb-server)
  fi
  [ ${#pkgs[@]} = 0 ] && return 0
  if ! command -v apt-get >/dev/null; then
    echo "local_slurm: needs ${pkgs[*]}, and apt-get is not there to install them" >&2
    exit 3
  fi
  log "installing ${pkgs[*]}"
  # Keep the packages' maintainer scripts from starting system-wide daemons (MariaDB on
  # :3306, munged, slurmd) that this script would then not own.
  local policy=/usr/sbin/policy-rc.d added_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    added_policy=1
  fi
  local rc=0
  {
    apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${pkgs[@]}" > "$BASE/apt.log" 2>&1
  } || rc=$?
  [ $added_policy = 1 ] && rm -f "$policy"
  if [ $rc != 0 ]; then
    tail -20 "$BASE/apt.log" >&2 || true
    echo "local_slurm: apt-get could not install ${pkgs[*]}" >&2
    exit 3
  fi
  log "installed slurm $(dpkg-query -W -f '${Version}' slurmctld)"
}

write_configs() {  # sets CONF_CHANGED
  mkdir -p "$BASE"/etc "$BASE"/log "$BASE"/run "$BASE"/spool/ctld "$BASE"/spool/d "$BASE"/dev
  mkdir -p "$BASE"/munge/etc "$BASE"/munge/run "$BASE"/munge/lib "$BASE"/munge/log
  chmod 755 "$BASE/munge" "$BASE/munge/run"
  chmod 700 "$BASE/munge/etc" "$BASE/munge/lib" "$BASE/munge/log"
  [ -s "$BASE/munge/etc/munge.key" ] || mungekey --create --keyfile="$BASE/munge/etc/munge.key"
  chown -R munge:munge "$BASE/munge"
  chmod 600 "$BASE/munge/etc/munge.key"

  local cores=$CPUS threads=1
  {
    cat <<EOF
# written by tests/cluster/local_slurm.sh
ClusterName=xlsentlocal
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$BASE/spool/ctld
SlurmdSpoolDir=$BASE/spool/d
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without a default, a job that names no memory takes the whole node.
DefMemPerCPU=1000
SlurmdParameters=config_overrides
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
ReturnToService=2
MinJobAge=600
KillWait=5
JobCompType=jobcomp/none
EOF
    if [ "$ACCOUNTING" = 1 ]; then
      cat <<EOF
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$((PORT + 2))
# The munge socket for slurmctld's connection to slurmdbd (AuthInfo covers only the others).
AccountingStoragePass=$MUNGE_SOCK
AccountingStorageTRES=gres/gpu
# sacct shows each job's --comment (Snakemake's plugin writes the rule or group there).
AccountingStoreFlags=job_comment
EOF
    else
      echo "JobAcctGatherType=jobacct_gather/none"
      echo "AccountingStorageType=accounting_storage/none"
    fi
    local node="NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cores Boards=1 SocketsPerBoard=1"
    node+=" CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$MEM_MB"
    if [ "$GPUS" -gt 0 ]; then
      echo "GresTypes=gpu"
      node+=" Gres=gpu:$GPU_TYPE:$GPUS"
    fi
    echo "$node State=UNKNOWN"
    echo "PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  } > "$CONF.new"
  if [ "$GPUS" -gt 0 ]; then
    # gres/gpu ignores GPUs without a File=; plain files do (slurmd logs that they are not
    # devices, and counts them).
    : > "$BASE/etc/gres.conf.new"
    for i in $(seq 0 $((GPUS - 1))); do
      touch "$BASE/dev/fakegpu$i"
      echo "NodeName=localhost Name=gpu Type=$GPU_TYPE File=$BASE/dev/fakegpu$i" \
        >> "$BASE/etc/gres.conf.new"
    done
  else
    : > "$BASE/etc/gres.conf.new"
  fi
  CONF_CHANGED=0
  local f
  for f in "$CONF" "$BASE/etc/gres.conf"; do
    if cmp -s "$f.new" "$f"; then rm -f "$f.new"; else CONF_CHANGED=1; mv "$f.new" "$f"; fi
    chmod 644 "$f"
  done
  if [ "$ACCOUNTING" = 1 ]; then
    (
      umask 077
      cat > "$BASE/etc/slurmdbd.conf.new" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdPort=$((PORT + 2))
SlurmUser=root
PidFile=$BASE/run/slurmdbd.pid
LogFile=$BASE/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
    )
    f="$BASE/etc/slurmdbd.conf"
    if cmp -s "$f.new" "$f"; then rm -f "$f.new"; else CONF_CHANGED=1; mv "$f.new" "$f"; fi
  fi
}

link_default_conf() {
  if [ -L "$ETC_LINK" ] && [ "$(readlink "$ETC_LINK")" = "$CONF" ]; then
    return 0
  elif [ -e "$ETC_LINK" ] || [ -L "$ETC_LINK" ]; then
    die "$ETC_LINK exists and is not a symlink to $CONF (another Slurm on this machine?); not replacing it"
  fi
  mkdir -p "$(dirname "$ETC_LINK")"
  ln -s "$CONF" "$ETC_LINK"
}

cmd_start() {
  ACCOUNTING=1 GPUS=2 CPUS=16 MEM_MB=131072
  while [ $# -gt 0 ]; do
    case "$1" in
      --no-accounting) ACCOUNTING=0 ;;
      --gpus) GPUS="$2"; shift ;;
      --cpus) CPUS="$2"; shift ;;
      --mem-mb) MEM_MB="$2"; shift ;;
      *) die "unknown argument to start: $1" ;;
    esac
    shift
  done
  [ "$(id -u)" = 0 ] || die "must run as root"
  mkdir -p "$BASE"
  install_packages
  write_configs
  link_default_conf
  if [ "$CONF_CHANGED" = 1 ]; then  # a running cluster with other settings: restart Slurm
    stop_pidfile "$BASE/run/slurmd.pid" slurmd
    stop_pidfile "$BASE/run/slurmctld.pid" slurmctld
    stop_pidfile "$BASE/run/slurmdbd.pid" slurmdbd
  fi

  if ! running "$BASE/munge/run/munged.pid" munged; then
    log "starting munged"
    runuser -u munge -- munged --socket="$MUNGE_SOCK" \
      --key-file="$BASE/munge/etc/munge.key" --log-file="$BASE/munge/log/munged.log" \
      --pid-file="$BASE/munge/run/munged.pid" --seed-file="$BASE/munge/lib/munged.seed"
  fi
  wait_for 20 munged sh -c "munge -n -S '$MUNGE_SOCK' | unmunge -S '$MUNGE_SOCK'"

  if [ "$ACCOUNTING" = 1 ]; then
    if ! running "$DB_DIR/mysqld.pid" mariadbd; then
      mkdir -p "$DB_DIR"
      if [ ! -d "$DB_DIR/data/mysql" ]; then
        log "initialising the MariaDB data directory"
        mariadb-install-db --no-defaults --user=root --datadir="$DB_DIR/data" \
          --auth-root-authentication-method=socket --skip-test-db > "$DB_DIR/install.log" 2>&1
      fi
      log "starting mariadbd on 127.0.0.1:$DB_PORT"
      setsid nohup mariadbd --no-defaults --user=root --datadir="$DB_DIR/data" \
        --socket="$DB_DIR/mysqld.sock" --pid-file="$DB_DIR/mysqld.pid" \
        --bind-address=127.0.0.1 --port="$DB_PORT" --log-error="$DB_DIR/mysqld.err" \
        --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 \
        < /dev/null > /dev/null 2>&1 &
    fi
    wait_for 60 mariadb mariadb --no-defaults -S "$DB_DIR/mysqld.sock" -u root -e 'SELECT 1'
    mariadb --no-defaults -S "$DB_DIR/mysqld.sock" -u root -e "
      CREATE DATABASE IF NOT EXISTS slurm_acct_db;
      CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
      CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
    if ! running "$BASE/run/slurmdbd.pid" slurmdbd; then
      log "starting slurmdbd"
      slurmdbd  # reads slurmdbd.conf beside $SLURM_CONF; daemonizes
    fi
    wait_for 60 "slurmdbd on :$((PORT + 2))" port_open $((PORT + 2))
  fi

  if ! running "$BASE/run/slurmctld.pid" slurmctld; then
    log "starting slurmctld"
    slurmctld
  fi
  wait_for 60 slurmctld sh -c 'scontrol ping | grep -q UP'
  if ! running "$BASE/run/slurmd.pid" slurmd; then
    log "starting slurmd"
    slurmd -N localhost
  fi

  local state="" resumed=0
  for _ in $(seq 1 300); do
    state=$(sinfo -h -N -n localhost -o %T 2>/dev/null | head -1 || true)
    case "$state" in
      idle | mixed | allocated | completing) break ;;
      *drain* | down* | fail*)
        if [ $resumed = 0 ]; then
          scontrol update nodename=localhost state=resume 2>/dev/null || true
          resumed=1
        fi
        ;;
    esac
    sleep 0.2
  done
  case "$state" in
    idle | mixed | allocated | completing) ;;
    *)
      tail -20 "$BASE/log/slurmd.log" "$BASE/log/slurmctld.log" >&2 || true
      die "node localhost is not ready (state '$state')"
      ;;
  esac
  log "cluster ready (accounting=$ACCOUNTING, partition $PARTITION)"
  sinfo -N -o '%P %N %T cpus=%c mem=%m gres=%G'
  echo "export SLURM_CONF=$CONF"
}

cmd_stop() {
  local purge=0
  [ "${1:-}" = "--purge" ] && purge=1
  [ "$(id -u)" = 0 ] || die "must run as root"
  if running "$BASE/run/slurmctld.pid" slurmctld; then
    local ids
    ids=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ' || true)
    if [ -n "${ids// /}" ]; then
      log "cancelling jobs $ids"
      # shellcheck disable=SC2086
      scancel $ids 2>/dev/null || true
      for _ in $(seq 1 100); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.2
      done
    fi
  fi
  stop_pidfile "$BASE/run/slurmd.pid" slurmd
  stop_pidfile "$BASE/run/slurmctld.pid" slurmctld
  stop_pidfile "$BASE/run/slurmdbd.pid" slurmdbd
  stop_pidfile "$DB_DIR/mysqld.pid" mariadbd
  stop_pidfile "$BASE/munge/run/munged.pid" munged
  if [ -L "$ETC_LINK" ] && [ "$(readlink "$ETC_LINK")" = "$CONF" ]; then
    rm -f "$ETC_LINK"
  fi
  if [ $purge = 1 ]; then
    rm -rf "$BASE"
    log "removed $BASE"
  fi
  log "stopped"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) cmd_status ;;
  *) sed -n '2,40p' "$0"; exit 2 ;;
esac
