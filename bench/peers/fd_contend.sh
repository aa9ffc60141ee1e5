#!/usr/bin/env bash
# bench/peers/fd_contend.sh TOOL HOLDFAST PATH DIR - one contender of
# scenario 1 for flock(1)'s fd form (TOOL flock) and holdfast flock's (TOOL
# hfflock): a script of its own, as cron jobs are, so the lock belongs to this
# shell (`exec 9>PATH; flock -n 9`). The FIFO protocol is run.sh's contender().
tool=$1 hf=$2 path=$3 dir=$4
take() { if [ "$tool" = flock ]; then flock "$@"; else "$hf" flock "$@"; fi; }
printf x >"$dir/ready"
read -r _ <"$dir/go"
exec 9>"$path"
take -n 9 2>/dev/null
ok=$?
[ $ok = 0 ] && echo "enter $$" >>"$dir/log"
printf x >"$dir/tried"
[ $ok = 0 ] || exit 0
read -r _ <"$dir/leave"
echo "exit $$" >>"$dir/log"
take -u 9
