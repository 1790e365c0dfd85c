#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# sdk_bench.sh: the E2B SDK's Sandbox.create() to the first commands.run()
# result, from a warm pool and without one, at concurrency 1 and 50
# (BENCH_CONCURRENCY), p50, p95 and p99 (BENCH_SAMPLES, BENCH_ROUNDS,
# BENCH_LEVEL_S and BENCH_REFILL_MS: see sdk_bench.mjs).  In the VM harness (this machine has no usable KVM): boots
# L1 with cubed serving a pool of BENCH_POOL sandboxes (default: the
# largest concurrency) and runs bench/sdk_bench.mjs here against it, as
# selftests/e2b/run_sdk_test.sh does for the SDK test.  Under TCG the
# times are emulated ones: compare them with each other, not with KVM
# hosts.  A measurement, not a test.
#
#   bench/sdk_bench.sh
#   BENCH_CONCURRENCY="1 4" BENCH_SAMPLES=5 bench/sdk_bench.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
conc=${BENCH_CONCURRENCY:-1 50}
max=0
for c in $conc; do
	[ "$c" -gt "$max" ] && max=$c
done
export BENCH_CONCURRENCY="$conc"
export SDK_SCRIPTS="$here/sdk_bench.mjs"
# A pool of N sandboxes wants memory: about 100 MiB of L1 each.
export MEM=${MEM:-$((2048 + max * 100))}
export TIMEOUT=${TIMEOUT:-5400}
dir=${VMTEST_DIR:-build/vmtest-sdk-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for tool in node npm; do
	if ! command -v $tool >/dev/null; then
		for p in ${BENCH_POOLS:-1 0}; do
			echo "bench: missing=latency_sdk:pool=$p reason=\"no $tool on this machine (the SDK runs here)\""
		done
		exit 1
	fi
done
# this host's TCP handshakes dropped on a full listen queue.  QEMU's
# forwarded ports listen with a backlog of 1, and a burst of new
# connections to L1 lost some there (the client read ECONNRESET), which a
# client on a KVM host talking to cubed directly does not; the harness
# now preloads selftests/qemu/listen_backlog.so into QEMU to give them a
# real backlog, and this count says whether any were still lost
listen_drops() {
	awk '$1 == "TcpExt:" && !h { for (i = 2; i <= NF; i++) k[i] = $i; h = 1; next }
	     $1 == "TcpExt:" { for (i = 2; i <= NF; i++) if (k[i] == "ListenDrops") print $i }' /proc/net/netstat
}
# One L1 boot a mode: with a warm pool of BENCH_POOL sandboxes (default:
# the largest concurrency), then without one (BENCH_POOLS="1 0").
st=0
for pooled in ${BENCH_POOLS:-1 0}; do
	# cube.sdk_bench=1: L1's e2b_serve.sh expects no SDK test's sandboxes
	if [ "$pooled" = 1 ]; then
		export L1_APPEND="cube.sdk_bench=1 cube.pool=${BENCH_POOL:-$max}"
	else
		export L1_APPEND="cube.sdk_bench=1"
	fi
	echo "# sdk_bench: $([ "$pooled" = 1 ] && echo "warm pool of ${BENCH_POOL:-$max}" || echo "no pool")"
	drops=$(listen_drops)
	{ BENCH_POOLED=$pooled VMTEST_DIR=$dir-$pooled \
		"$here/../selftests/e2b/run_sdk_test.sh" 2>&1 ||
		echo "# sdk_bench: the SDK run failed"; } | tee "$out"
	grep -q '^# sdk_bench: the SDK run failed' "$out" && st=1
	echo "# sdk_bench: $(($(listen_drops) - ${drops:-0})) connection handshakes dropped on this host's full listen queues during that run"
	grep -q "^bench: figure=latency_sdk pool=$pooled " "$out" ||
		echo "bench: missing=latency_sdk:pool=$pooled reason=\"the SDK run gave no figure (failed, or L1 reached TIMEOUT=$TIMEOUT s): see the log\""
done
exit $st
