#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# net_e2e_test.sh: sandbox networking end to end, from inside real guests.
#
# The test builds a small world in L1 out of network namespaces of its own:
# "inet" holds a public-looking server (203.0.113.10:80, TEST-NET-3),
# "meta" answers on the cloud metadata address 169.254.169.254:80, "lan"
# is a private network (10.99.0.10:80); L1 itself serves on its own address
# 192.0.2.1:8080.  L1 routes to all of them, and nothing in L1 routes
# further out.  Sandboxes of one template then try each from inside the
# guest (python3 sockets):
#
#   internet   reaches the public server, nothing else; every refusal is
#              counted under its reason (metadata, private, host);
#   a list     admits exactly what it names, and a live change (net set)
#              takes effect without a restart;
#   deny       reaches nothing; none: a device with nowhere to go;
#   a pool     a warm sandbox, its network up, taken with another policy
#              swapped in;
#
# and finally, whether a sandbox ends by kill, by SIGKILL of its VMM or of
# its supervisor, its host-side device and its program go with it.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh
. ./sandbox.sh

C=./cubectl
# iproute2's ip (namespaces), not busybox's
ip() { /usr/sbin/ip "$@"; }
export CUBE_STATE_DIR=/tmp/net-e2e/state CUBE_RUN_DIR=/tmp/net-e2e/run
rm -rf /tmp/net-e2e
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR" /tmp/net-e2e/www /var/run/netns

ids=
cleanup() {
	[ -n "$ids" ] && $C kill $ids >/dev/null 2>&1
	$C template rm nett >/dev/null 2>&1
	for ns in inet meta lan; do
		for p in $(ip netns pids $ns 2>/dev/null); do kill "$p"; done
		ip netns del $ns 2>/dev/null
	done
	[ -n "$hostd" ] && kill "$hostd" 2>/dev/null
	[ -n "$cubed" ] && kill "$cubed" 2>/dev/null
	$C pool set nett --size 0 >/dev/null 2>&1
	ip link del w-host 2>/dev/null
	rm -rf /tmp/net-e2e /tmp/net-e2e-rootfs.ext4
}
trap cleanup EXIT

# world NS HOSTADDR NSADDR SERVICE: namespace NS behind a /30 from L1, with
# SERVICE (an address) on its loopback, routed from L1
world() {
	ip netns add "$1" &&
	ip link add "w-$1" type veth peer name eth0 netns "$1" &&
	ip addr add "$2/30" dev "w-$1" && ip link set "w-$1" up &&
	ip -n "$1" addr add "$3/30" dev eth0 && ip -n "$1" link set eth0 up &&
	ip -n "$1" link set lo up &&
	ip -n "$1" addr add "$4/32" dev lo &&
	ip -n "$1" route add default via "$2" &&
	ip route add "$4/32" via "$3" &&
	ip netns exec "$1" busybox httpd -p "$4:80" -h /tmp/net-e2e/www
}

# guest ID ADDR PORT: "OK <status line>" when the guest reaches ADDR:PORT
guest() {
	$C exec "$1" -- python3 -c '
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    print("OK", s.recv(64).split(b"\r\n")[0].decode())
except Exception as e:
    print("FAIL", e)' "$2" "$3" 2>&1
}

reach() {	# NAME ID ADDR PORT
	out=$(guest "$2" "$3" "$4")
	case $out in
	"OK HTTP/1."*" 200 "*) ok "$1" ;;
	*) not_ok "$1" "$3:$4 from sandbox $2: $out" ;;
	esac
}

no_reach() {	# NAME ID ADDR PORT
	out=$(guest "$2" "$3" "$4")
	case $out in
	FAIL*) ok "$1" ;;
	*) not_ok "$1" "$3:$4 from sandbox $2 answered: $out" ;;
	esac
}

# dropped ID REASON: packets the sandbox's program dropped for REASON
dropped() {
	$C net show "$1" | awk -v r="$2" '$1 == r { print $2 }'
}

counted() {	# NAME ID REASON BEFORE
	n=$(dropped "$2" "$3")
	[ -n "$n" ] && [ "$n" -gt "$4" ] && ok "$1" ||
		not_ok "$1" "$3 drops of sandbox $2: '$4' before, '$n' after"
}

host_links() {
	ip -o link show | grep -c ': cube[0-9]'
}

wait_links() {	# N: wait until L1 has N cube links (10 s)
	i=0
	while [ "$(host_links)" != "$1" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ "$(host_links)" = "$1" ]
}

pool_ready() {
	$C pool ls | awk '$1 == "nett" && $3 >= 1 { f = 1 } END { exit !f }'
}

pool_taken() {
	$C --json pool ls | grep -q '"taken": *1'
}

ktap_plan 29
echo '<html>cube public</html>' > /tmp/net-e2e/www/index.html
links0=$(host_links)
world inet 192.0.2.1 192.0.2.2 203.0.113.10 &&
world meta 192.0.2.5 192.0.2.6 169.254.169.254 &&
world lan 192.0.2.9 192.0.2.10 10.99.0.10 &&
{ busybox httpd -f -p 192.0.2.1:8080 -h /tmp/net-e2e/www & hostd=$!; } &&
wait_until 10 wget -q -O /dev/null http://192.0.2.1:8080/ &&
	wget -q -O /dev/null http://203.0.113.10/ &&
	wget -q -O /dev/null http://169.254.169.254/ &&
	wget -q -O /dev/null http://10.99.0.10/ &&
	ok "the world answers L1" || not_ok "the world answers L1" "set-up failed"

rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
cp "$rootfs" /tmp/net-e2e-rootfs.ext4
expect "template with a network device" 0 $C template build nett \
	--kernel /boot/vmlinuz --initrd ./initramfs.cpio.gz \
	--rootfs /tmp/net-e2e-rootfs.ext4 --append cube.rootfstype=ext4
a=$($C create --template nett)
b=$($C create --template nett)
ids="$a $b"
[ -n "$a" ] && [ -n "$b" ] && ok "two sandboxes, default policy" ||
	not_ok "two sandboxes, default policy" "ids '$a' '$b'"

# the network was built by cube-shim-net, which exited: the shim, alive as
# long as its sandbox, maps neither libbpf nor libnftables
shim=$($C --json inspect "$a" | sed -n 's/.*"owner_pid": *\([0-9]*\).*/\1/p')
libs=$(grep -oE 'lib(bpf|nftables)[^ ]*' "/proc/${shim:-0}/maps" 2>/dev/null | sort -u)
[ -n "$shim" ] && [ -r "/proc/$shim/maps" ] && [ -z "$libs" ] &&
	! pgrep -x cube-shim-net > /dev/null &&
	ok "the network is built in cube-shim-net: the shim maps neither libbpf nor libnftables" ||
	not_ok "the network is built in cube-shim-net: the shim maps neither libbpf nor libnftables" \
		"shim '$shim' maps: $libs; $(pgrep -ax cube-shim-net)"
# cube-shim-net's bad arguments: status 2, a reason, nothing run
bad=0
for args in "" "create" "create x internet" "audit 1 2" "build 1" "create 1"; do
	# shellcheck disable=SC2086
	out=$(./cube-shim-net $args 2>&1)
	[ $? = 2 ] && case $out in *"bad arguments"*) ;; *) false ;; esac ||
		{ bad=1; echo "# cube-shim-net $args: $out"; }
done
[ $bad = 0 ] && ok "cube-shim-net refuses bad arguments with status 2" ||
	not_ok "cube-shim-net refuses bad arguments with status 2"
# a cube-shim-net that builds the network, hands it to cube.ko, then
# cannot answer (its socket is /dev/null: its send fails, status 1): the
# create fails saying so, and the sandbox goes with everything it had (its
# host-side veth end included).  The wrapper records the helper's status,
# so a helper that never got that far (status 127, say) fails the test.
links=$(host_links)
dirs=$(ls "$CUBE_RUN_DIR/sandboxes" | wc -l)
printf '#!/bin/sh\n%s/cube-shim-net "$@" 4</dev/null\necho $? > /tmp/net-e2e/mute-status\nexit 1\n' \
	"$PWD" > /tmp/net-e2e/mute-net
chmod +x /tmp/net-e2e/mute-net
out=$(CUBE_SHIM_NET=/tmp/net-e2e/mute-net $C create --template nett 2>&1)
rc=$?
dirs_back() { [ "$(ls "$CUBE_RUN_DIR/sandboxes" | wc -l)" = "$dirs" ]; }
[ $rc != 0 ] && case $out in *"cube-shim-net ended without an answer (status 1)"*) ;; *) false ;; esac &&
	[ "$(cat /tmp/net-e2e/mute-status 2>/dev/null)" = 1 ] &&
	wait_links "$links" && wait_until 10 dirs_back &&
	[ "$($C ls | awk 'NR > 1' | wc -l)" = 2 ] &&
	ok "a cube-shim-net that never answers fails the create and leaves nothing" ||
	not_ok "a cube-shim-net that never answers fails the create and leaves nothing" \
		"status $rc: $out; helper status $(cat /tmp/net-e2e/mute-status 2>/dev/null); host links $(host_links) (were $links); $($C ls)"

# the guest's side is the template's, the same in every sandbox
out=$($C exec "$a" -- sh -c 'cat /sys/class/net/eth0/address; grep nameserver /etc/resolv.conf')
case $out in
*06:cb:00:00:00:15*"nameserver 169.254.0.22"*) ok "guest eth0 and resolver as built" ;;
*) not_ok "guest eth0 and resolver as built" "got: $out" ;;
esac

reach "internet: the public server" "$a" 203.0.113.10 80
m0=$(dropped "$a" metadata) p0=$(dropped "$a" private) h0=$(dropped "$a" host)
no_reach "internet: no cloud metadata" "$a" 169.254.169.254 80
counted "counted as metadata" "$a" metadata "$m0"
no_reach "internet: no private network" "$a" 10.99.0.10 80
counted "counted as private" "$a" private "$p0"
no_reach "internet: not the host" "$a" 192.0.2.1 8080
counted "counted as host" "$a" host "$h0"
bhost=$($C net show "$b" --json | sed -n 's/.*"host_address": *"\([0-9.]*\)".*/\1/p')
bns=$($C net show "$b" --json | sed -n 's/.*"netns_address": *"\([0-9.]*\)".*/\1/p')
[ -n "$bns" ] && out=$(guest "$a" "$bns" 80) && case $out in
	FAIL*) ok "no east-west: sandbox B's address" ;;
	*) not_ok "no east-west: sandbox B's address" "$bns answered $out" ;;
	esac || not_ok "no east-west: sandbox B's address" "no address for $b (host $bhost)"

# an allow list, changed live
printf 'allow 10.99.0.0/16:80\n' > /tmp/net-e2e/lan.policy
expect "net set: an allow list, live" 0 $C net set "$a" /tmp/net-e2e/lan.policy
reach "the list admits what it names" "$a" 10.99.0.10 80
no_reach "and nothing else" "$a" 203.0.113.10 80
expect "net set: back to internet" 0 $C net set "$a" internet
reach "the change is live both ways" "$a" 203.0.113.10 80

d=$($C create --template nett --net deny)
n=$($C create --template nett --net none)
ids="$ids $d $n"
no_reach "deny: nothing out" "$d" 203.0.113.10 80
f=$($C fork "$d")
ids="$ids $f"
$C net show "$f" | grep -q '^policy *deny' &&
	ok "a fork keeps its parent's policy" ||
	not_ok "a fork keeps its parent's policy" "$($C net show "$f" 2>&1 | head -n 3)"
no_reach "and reaches nothing either" "$f" 203.0.113.10 80
no_reach "none: nowhere to go" "$n" 203.0.113.10 80

# a warm sandbox: taken with --net deny, the policy swapped in live
$C pool set nett --size 1 >/dev/null
./cubed --no-api 2>/tmp/net-e2e/cubed.log &
cubed=$!
wait_until 180 pool_ready && ok "cubed fills the pool, networks up" ||
	not_ok "cubed fills the pool, networks up" "$($C pool ls)"
pd=$($C create --template nett --net deny)
ids="$ids $pd"
pool_taken && $C net show "$pd" | grep -q '^policy *deny' &&
	ok "create --net deny takes the warm sandbox" ||
	not_ok "create --net deny takes the warm sandbox" "$($C pool ls; $C net show "$pd")"
no_reach "and it reaches nothing" "$pd" 203.0.113.10 80
kill "$cubed"
wait "$cubed" 2>/dev/null
cubed=
$C pool set nett --size 0 >/dev/null
# the refilled warm sandbox, and the taken one
for i in $($C --json ls | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
	case " $a $b $d $n $f " in
	*" $i "*) ;;
	*) $C kill "$i" >/dev/null 2>&1 ;;
	esac
done

# every way a sandbox ends takes its network with it
kill -9 "$(vmm_pid "$a")"
p=$(vmm_pid "$b")
kill -9 "$(awk '{ print $4 }' "/proc/$p/stat")"
$C kill "$d" "$n" "$f" >/dev/null 2>&1
wait_links "$links0" && ! $C net show "$a" >/dev/null 2>&1 &&
	! $C net show "$b" >/dev/null 2>&1 &&
	ok "kill, SIGKILL of a VMM or a shim: nothing left" ||
	not_ok "kill, SIGKILL of a VMM or a shim: nothing left" \
		"$(host_links) cube links, $links0 before"
# the behaviour log kept what each program dropped, by reason, at its end
$C --json audit "$a" 2>&1 | tr -d ' \n' > /tmp/net-e2e/audit-a
$C --json audit "$d" 2>&1 | tr -d ' \n' > /tmp/net-e2e/audit-d
case "$(cat /tmp/net-e2e/audit-a) $(cat /tmp/net-e2e/audit-d)" in
*'"event":"network"'*'"dropped_packets":{"policy":'[1-9]*'"metadata":'[1-9]*'"private":'[1-9]*'"host":'[1-9]*'"event":"network"'*'"dropped_packets":{"policy":'[1-9]*)
	ok "the behaviour log: each sandbox's drops by reason at its end" ;;
*)
	not_ok "the behaviour log: each sandbox's drops by reason at its end" \
		"$(head -c 600 /tmp/net-e2e/audit-a)" ;;
esac
exit $ktap_failed
