# tests/cross/etcd.sh - sourced by cross.sh and modes.sh: an etcd of the
# caller's own for its etcd round.
#   cross_etcd_start DIR   start one member on free loopback ports, its data
#                          and log in DIR; sets etcd_pid and B (the backend
#                          URI, etcd://127.0.0.1:PORT) once a lock's status
#                          can be read there; returns 1 (the log printed)
#                          when it does not start. Needs $hf and $py.
#   cross_etcd_stop        kill it by pid (etcd_pid) and reap it; nothing
#                          when none runs. The caller's EXIT trap calls it.
# Ports are drawn below the kernel's ephemeral range, so no connection's
# local end takes a port before the member binds it (tests/etcd/et.c's rule).
etcd_pid=
B=

cross_etcd_free_port() {
	"$py" -c '
import random, socket
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
lo = lo if lo > 20100 else 65536
for _ in range(1000):
    p = random.randrange(20000, lo)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("no free loopback port below %d" % lo)'
}

cross_etcd_start() {
	local dir=$1 port peer ready=
	command -v etcd >/dev/null || { echo "etcd not installed (apt-get install etcd-server)"; return 1; }
	port=$(cross_etcd_free_port) && peer=$(cross_etcd_free_port) || return 1
	while [ "$peer" = "$port" ]; do peer=$(cross_etcd_free_port) || return 1; done
	setpriv --pdeathsig KILL -- etcd --name t --data-dir "$dir/etcd" \
		--listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "t=http://127.0.0.1:$peer" >"$dir/etcd.log" 2>&1 &
	etcd_pid=$!
	B=etcd://127.0.0.1:$port
	# ready once the library can read a key there (bounded: 60 tries of at
	# most 1 s each, the request's own timeout)
	for _ in $(seq 60); do
		if "$hf" lock status "$dir/probe.lock" --backend "$B" --etcd-timeout 1s >/dev/null 2>&1; then ready=1; break; fi
		kill -0 "$etcd_pid" 2>/dev/null || break
		sleep 0.2
	done
	[ -n "$ready" ] && return 0
	echo "etcd did not start:"
	cat "$dir/etcd.log"
	return 1
}

cross_etcd_stop() {
	[ -n "$etcd_pid" ] || return 0
	kill -KILL "$etcd_pid" 2>/dev/null
	wait "$etcd_pid" 2>/dev/null
	etcd_pid=
}
