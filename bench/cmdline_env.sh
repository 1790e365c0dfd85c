# SPDX-License-Identifier: GPL-2.0
#
# cmdline_env.sh: sourced by the benchmark scripts.  In the VM harness,
# where the caller's environment does not reach, a benchmark's settings
# come on L1's kernel command line: cube.bench_samples=10 becomes
# BENCH_SAMPLES=10, commas standing for spaces (cube.bench_concurrency=1,10
# is BENCH_CONCURRENCY="1 10").  Set through the harness's L1_APPEND.
for a in $(cat /proc/cmdline); do
	case $a in
	cube.bench_*=*)
		k=${a%%=*}
		k=BENCH_$(echo "${k#cube.bench_}" | tr a-z A-Z)
		export "$k=$(echo "${a#*=}" | tr , ' ')"
		;;
	esac
done
