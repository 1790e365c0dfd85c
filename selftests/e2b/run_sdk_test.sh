#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run_sdk_test.sh: the E2B SDK itself as cubed's client.  Boots L1 in the
# VM harness with three ports forwarded from this machine, where
# e2b_serve.sh builds a template and runs cubed; then runs sdk_test.mjs
# and every other sdk_*test.mjs beside it here under node against
# E2B_API_URL / E2B_SANDBOX_URL on those ports.
#
#   selftests/e2b/run_sdk_test.sh
#
# Environment: SDK_SCRIPTS (other .mjs files to run), L1_APPEND (for
# L1's command line: cube.pool=N serves from a warm pool of N),
# E2B_SDK_DIR (where the pinned SDK of selftests/e2b/sdk is installed,
# default /tmp/e2bsdk: npm ci there when its lock file differs),
# API_PORT / ENVD_PORT / PROXY_PORT (the host's ports, default
# 43000 / 43983 / 43001: cubed's API, envd and port proxy),
# VMTEST_DIR (default build/vmtest-e2b).  Needs node (>= 18) and npm.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
sdk=${E2B_SDK_DIR:-/tmp/e2bsdk}
api=${API_PORT:-43000}
envd=${ENVD_PORT:-43983}
proxy=${PROXY_PORT:-43001}
key=cube-e2b-test-key

for tool in node npm curl; do
	command -v $tool >/dev/null || { echo "run_sdk_test: needs $tool" >&2; exit 2; }
done
# The SDK packages the tests run against are pinned: sdk/package.json and
# its lock file.  npm ci installs exactly those whenever $sdk holds another
# lock file (or none).
if ! cmp -s "$here/sdk/package-lock.json" "$sdk/package-lock.json" ||
   [ ! -d "$sdk/node_modules/e2b" ] ||
   [ ! -d "$sdk/node_modules/@e2b/code-interpreter" ]; then
	mkdir -p "$sdk" &&
	cp "$here/sdk/package.json" "$here/sdk/package-lock.json" "$sdk/" &&
	(cd "$sdk" && npm ci --no-audit --no-fund >/dev/null) ||
		{ echo "run_sdk_test: cannot install the pinned E2B SDK (selftests/e2b/sdk) in $sdk" >&2; exit 1; }
fi
echo "# run_sdk_test: e2b $(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$sdk/node_modules/e2b/package.json")," \
	"@e2b/code-interpreter $(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$sdk/node_modules/@e2b/code-interpreter/package.json")"
# ES modules resolve packages from their own folder
cp "$here"/sdk_*test.mjs "$sdk/"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# L1 holds a copy of each rootfs (the code interpreter's is large) and
# builds the code-interpreter-v1 template too (1 GiB of guest memory,
# snapshotted into /tmp): more memory and time.
make -C "$top" --no-print-directory vmtest T=e2b:e2b_serve.sh \
	FWD="$api:3000,$envd:49983,$proxy:3001" VMTEST_DIR="${VMTEST_DIR:-build/vmtest-e2b}" \
	MEM="${MEM:-8192}" TIMEOUT="${TIMEOUT:-2700}" \
	>"$log" 2>&1 &
vm=$!

echo "# run_sdk_test: waiting for cubed on 127.0.0.1:$api"
t=1800
until curl -sf "http://127.0.0.1:$api/health" >/dev/null; do
	if ! kill -0 $vm 2>/dev/null || [ $t -le 0 ]; then
		echo "run_sdk_test: cubed never answered" >&2
		cat "$log" >&2
		kill $vm 2>/dev/null
		exit 1
	fi
	sleep 2
	t=$((t - 2))
done

case ${L1_APPEND:-} in
*cube.pool=*)
	# L1's results reach $log only when it ends: its results.log has them
	# as they come
	res=${VMTEST_DIR:-build/vmtest-e2b}/results.log
	case $res in /*) ;; *) res=$top/$res ;; esac
	echo "# run_sdk_test: waiting for the warm pool"
	t=900
	until grep -q '^ *# pool:' "$log" "$res" 2>/dev/null; do
		[ $t -le 0 ] && break
		sleep 2
		t=$((t - 2))
	done
	grep -h '^ *# pool:' "$log" "$res" 2>/dev/null
	;;
esac

export E2B_API_URL="http://127.0.0.1:$api" E2B_SANDBOX_URL="http://127.0.0.1:$envd"
export E2B_API_KEY=$key CUBE_TEMPLATE=base CUBE_PROXY_PORT=$proxy
# One file after another: each is a TAP stream of its own.  SDK_SCRIPTS
# names other files to run instead; a *_bench.mjs is a plain script.
st=0
for t in ${SDK_SCRIPTS:-"$here"/sdk_*test.mjs}; do
	echo "# run_sdk_test: ${t##*/}"
	cp "$t" "$sdk/"
	case $t in
	*_bench.mjs) (cd "$sdk" && node "${t##*/}") || st=1 ;;
	*) (cd "$sdk" && node --test --test-reporter=tap "${t##*/}") || st=1 ;;
	esac
done

# tell L1 the test is over
(cd "$sdk" && node --input-type=module -e "
import { Sandbox } from 'e2b';
await Sandbox.create('base', { metadata: { 'cube-test': 'done' } });
") || echo "run_sdk_test: could not signal the end to L1" >&2
wait $vm
vmst=$?
cat "$log"
[ $st = 0 ] && [ $vmst = 0 ]
