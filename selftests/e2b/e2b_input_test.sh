#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# e2b_input_test.sh: cubed's E2B API on the real backend (cube.ko,
# cube-vmm, a template built from the guest images) against what a client
# should never send, and cubed started on a damaged state directory.
#
#   * Malformed and hostile requests (bad JSON, wrong types, huge and
#     negative numbers, unknown fields, path traversal in ids and names,
#     an oversized body, missing or wrong headers) are refused with their
#     status, and nothing is created or changed: no sandbox, no VMM process,
#     no file in the state or run directories, no template, the live
#     sandbox's record untouched.  One well-formed create first shows the
#     template works, so a refusal is the request's doing.
#   * Paused sandbox records (truncated, garbage, wrong types, empty, naming
#     another sandbox), templates (bad values, garbage) and the E2B id
#     counter, damaged while cubed is down: it starts and answers, lists
#     the good records only, says which it ignores in its log, changes none
#     of them, and hands out a fresh id that collides with nothing.
#
# Raw HTTP through http_raw (L1 has no curl; busybox nc half-closes).  Needs cube.ko, /dev/kvm and
# the guest rootfs disk.
cd "$(dirname "$0")" || exit 1

C=./cubectl
W=/tmp/e2b-input
export CUBE_STATE_DIR=$W/state CUBE_RUN_DIR=$W/run
API=3100
ENVD=49100
KEY=cube-input-key
PLANTED=planted-9f86d081884c7d65
n=0 failed=0 cubed_pid= BODYPAT=

ok() {
	n=$((n + 1))
	echo "ok $n $1"
}

not_ok() {
	n=$((n + 1))
	echo "# $2" | head -c 1500
	echo
	echo "not ok $n $1"
	failed=1
}

# req PORT METHOD PATH [BODY|@FILE [HEADER...]]: the answer's status on
# stdout, its body in $W/body.  The valid API key goes with every request
# unless a header list is given.
req() {
	port=$1 method=$2 path=$3 body=${4-}
	if [ $# -gt 4 ]; then
		shift 4
	else
		set -- "X-API-Key: $KEY"
	fi
	{
		printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n' \
			"$method" "$path"
		for h in "$@"; do
			[ -n "$h" ] && printf '%s\r\n' "$h"
		done
		case $body in
		@*)
			printf 'Content-Type: application/json\r\nContent-Length: %s\r\n\r\n' \
				"$(wc -c < "${body#@}")"
			cat "${body#@}"
			;;
		?*)
			printf 'Content-Type: application/json\r\nContent-Length: %s\r\n\r\n%s' \
				"${#body}" "$body"
			;;
		*)
			printf '\r\n'
			;;
		esac
	} > $W/request
	: > $W/resp
	./http_raw "$port" $W/request > $W/resp 2>/dev/null
	sed -n '1s/^HTTP\/1\.[01] \([0-9]*\).*/\1/p' $W/resp
	sed '1,/^\r*$/d' $W/resp > $W/body
}

# cube-vmm and cube-shim processes running
vmm_procs() {
	cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^cube-\(vmm\|shim\)$'
}

# conditions to wait for: evaluated on each try
no_vmm() {
	[ "$(vmm_procs)" = 0 ]
}

no_sandbox() {
	[ "$(sandboxes)" = 0 ]
}

sandboxes() {
	$C --json stats | sed -n 's/.*"sandboxes": *\([0-9]*\).*/\1/p'
}

# what a refused request must not change
snapshot() {
	$C ls 2>&1 | awk '{ print $1, $2, $3 }'
	$C template ls 2>&1 | awk '{ print $1 }'
	echo "vmm $(vmm_procs)"
	find "$CUBE_STATE_DIR" "$CUBE_RUN_DIR" 2>&1 | sort
	md5sum "$CUBE_RUN_DIR"/sandboxes/*/e2b.json "$CUBE_STATE_DIR"/e2b-last-id 2>&1
}

wait_for() {
	t=$1
	shift
	while [ "$t" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
		t=$((t - 1))
	done
	return 1
}

healthy() {
	[ "$(req $API GET /health)" = 200 ]
}

start_cubed() {
	./cubed --api-port $API --envd-port $ENVD --api-key-file $W/keys -v \
		2>>$W/cubed.log &
	cubed_pid=$!
	wait_for 60 healthy
}

stop_cubed() {
	[ -n "$cubed_pid" ] || return 0
	kill "$cubed_pid" 2>/dev/null
	wait "$cubed_pid"
	st=$?
	cubed_pid=
	return $st
}

cleanup() {
	stop_cubed
	for id in $($C --json ls 2>/dev/null | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
		$C kill "$id" >/dev/null 2>&1
	done
	wait_for 60 no_sandbox
	for t in $($C template ls 2>/dev/null | awk 'NR > 1 { print $1 }'); do
		$C template rm "$t" >/dev/null 2>&1
	done
	rm -rf $W
}

# refused WANT NAME PORT METHOD PATH [BODY [HEADER...]]: the request is
# answered WANT (one status, or several separated by |), its body holds
# $BODYPAT if set, and nothing changes
refused() {
	want=$1 name=$2
	shift 2
	snapshot > $W/before
	got=$(req "$@")
	snapshot > $W/after
	msg=$(head -c 200 $W/body | tr '\n' ' ')
	case "|$want|" in
	*"|$got|"*)
		if [ -n "$BODYPAT" ] && ! grep -q "$BODYPAT" $W/body; then
			not_ok "$name: $want, nothing changed" "no '$BODYPAT' in: $msg"
		elif cmp -s $W/before $W/after; then
			ok "$name: $got, nothing changed"
		else
			not_ok "$name: $want, nothing changed" \
				"changed: $(diff $W/before $W/after | tail -n +3 | head -n 10 | tr '\n' ' ')"
		fi
		;;
	*)
		not_ok "$name: $want, nothing changed" "answered '$got': $msg"
		;;
	esac
}

# every status-checked refusal below, as "WANT|NAME|METHOD|PATH|BODY"
# (WANT may list statuses separated by commas, where the HTTP library or
# the router may refuse a URL in more than one way; BODY may be @FILE); @S@ is the live
# sandbox's id
API_CASES='
400|truncated JSON|POST|/v2/sandboxes|{"templateID":"base"
400|not JSON|POST|/v2/sandboxes|not json
400|an array, not an object|POST|/v2/sandboxes|[]
400|an empty body|POST|/v2/sandboxes|@/dev/null
400|data after the object|POST|/v2/sandboxes|{"templateID":"base"} {}
400|single-quoted string|POST|/v2/sandboxes|{'"'"'templateID'"'"':'"'"'base'"'"'}
400|templateID a number|POST|/v2/sandboxes|{"templateID":5}
400|templateID null|POST|/v2/sandboxes|{"templateID":null}
400|templateID missing, unknown fields only|POST|/v2/sandboxes|{"bogus":1,"templateId":"base"}
400|templateID with a NUL|POST|/v2/sandboxes|{"templateID":"ba\u0000se"}
400|templateID with path traversal|POST|/v2/sandboxes|{"templateID":"../../etc"}
400|templateID with a slash|POST|/v2/sandboxes|{"templateID":"base/../base"}
400|templateID of 10000 bytes|POST|/v2/sandboxes|@LONGNAME
400|timeout a string|POST|/v2/sandboxes|{"templateID":"base","timeout":"60"}
400|timeout negative|POST|/v2/sandboxes|{"templateID":"base","timeout":-1}
400|timeout above a day|POST|/v2/sandboxes|{"templateID":"base","timeout":86401}
400|timeout beyond 64 bits|POST|/v2/sandboxes|{"templateID":"base","timeout":99999999999999999999999}
400|timeout 1e300|POST|/v2/sandboxes|{"templateID":"base","timeout":1e300}
400|timeout fractional|POST|/v2/sandboxes|{"templateID":"base","timeout":1.5}
400|metadata of numbers|POST|/v2/sandboxes|{"templateID":"base","metadata":{"a":1}}
400|metadata a string|POST|/v2/sandboxes|{"templateID":"base","metadata":"x"}
400|metadata of 65 entries|POST|/v2/sandboxes|@META65
400|envVars an array|POST|/v2/sandboxes|{"templateID":"base","envVars":[1]}
400|autoPause a string|POST|/v2/sandboxes|{"templateID":"base","autoPause":"yes"}
400|network.allowOut a string|POST|/v2/sandboxes|{"templateID":"base","network":{"allowOut":"1.2.3.4"}}
400|allow_internet_access a number|POST|/v2/sandboxes|{"templateID":"base","allow_internet_access":1}
413|a body of 2 MiB|POST|/v2/sandboxes|@HUGE
404|an unknown template|POST|/v2/sandboxes|{"templateID":"nosuch"}
400,404|get: an id with encoded traversal|GET|/sandboxes/..%2F..%2Fetc|
400,404|get: a traversal path|GET|/sandboxes/../../etc/passwd|
404|get: a negative id|GET|/sandboxes/-1|
404|get: an id beyond 64 bits|GET|/sandboxes/999999999999999999999999999|
400,404,405|kill: an id with an encoded NUL|DELETE|/sandboxes/%00|
400,404|kill: the live id with a traversal suffix|DELETE|/sandboxes/@S@%2F..|
404|pause: an unknown id|POST|/sandboxes/99999999999999999999999/pause|
400|timeout of the live one: negative|POST|/sandboxes/@S@/timeout|{"timeout":-5}
400|timeout of the live one: a string|POST|/sandboxes/@S@/timeout|{"timeout":"600"}
400|timeout of the live one: not JSON|POST|/sandboxes/@S@/timeout|{timeout:600}
400|fork of the live one: timeout a string|POST|/sandboxes/@S@/fork|{"timeout":"x"}
400|snapshot of the live one: a traversal name|POST|/sandboxes/@S@/snapshots|{"name":"../../escaped"}
400|snapshot of the live one: name a number|POST|/sandboxes/@S@/snapshots|{"name":5}
400|network of the live one: allowOut a number|PUT|/sandboxes/@S@/network|{"allowOut":5}
400|network of the live one: not JSON|PUT|/sandboxes/@S@/network|[
'

run() {
	rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
	if [ -z "$rootfs" ] || [ ! -c /dev/kvm ]; then
		not_ok "guest images and /dev/kvm are there" "rootfs '$rootfs'"
		return
	fi
	cp "$rootfs" $W/rootfs.ext4
	if $C template build base --kernel /boot/vmlinuz --initrd ./initramfs.cpio.gz \
		--rootfs $W/rootfs.ext4 --append cube.rootfstype=ext4 >$W/build.log 2>&1; then
		ok "template base builds"
	else
		not_ok "template base builds" "$(tail -n 5 $W/build.log)"
		return
	fi
	# a named key: the behaviour log says "ci", never the key
	echo "ci $KEY" > $W/keys
	if start_cubed; then
		ok "cubed serves the E2B API on the real backend"
	else
		not_ok "cubed serves the E2B API on the real backend" "$(tail -n 5 $W/cubed.log)"
		return
	fi

	# the positive control: a well-formed create works
	st=$(req $API POST /v2/sandboxes '{"templateID":"base","timeout":600,"metadata":{"k":"v"},"envVars":{"PLANTED_ENV":"'"$PLANTED"'-env"},"unknownField":true}')
	S=$(sed -n 's/.*"sandboxID": *"\([0-9]*\)".*/\1/p' $W/body)
	TOK=$(sed -n 's/.*"envdAccessToken": *"\([0-9a-f]*\)".*/\1/p' $W/body)
	if [ "$st" = 201 ] && [ -n "$S" ] && [ "$(sandboxes)" = 1 ]; then
		ok "a well-formed create (an unknown field ignored) makes sandbox $S"
	else
		not_ok "a well-formed create (an unknown field ignored) makes a sandbox" \
			"status '$st': $(head -c 300 $W/body)"
		return
	fi

	# bodies too big for a command line
	awk 'BEGIN { printf "{\"templateID\":\""; for (i = 0; i < 10000; i++) printf "a"; printf "\"}" }' > $W/LONGNAME
	awk 'BEGIN { printf "{\"templateID\":\"base\",\"metadata\":{"; for (i = 0; i < 65; i++) printf "%s\"k%d\":\"v\"", i ? "," : "", i; printf "}}" }' > $W/META65
	{ printf '{"templateID":"base","metadata":{"a":"'; head -c 2097152 /dev/zero | tr '\0' 'a'; printf '"}}'; } > $W/HUGE

	echo "$API_CASES" | while IFS='|' read -r want name method path body; do
		[ -n "$want" ] || continue
		path=$(echo "$path" | sed "s/@S@/$S/g")
		case $body in @[A-Z]*) body=@$W/${body#@} ;; esac
		refused "$(echo "$want" | tr , '|')" "$name" $API "$method" "$path" "$body"
		echo "$n $failed" > $W/count
	done
	read -r n failed < $W/count

	# headers: none, a wrong key, a key in the wrong header
	refused 401 "create without an API key" $API POST /v2/sandboxes '{"templateID":"base"}' ""
	refused 401 "create with a wrong API key" $API POST /v2/sandboxes '{"templateID":"base"}' "X-API-Key: not-$KEY"
	refused 401 "create with the key as a Basic user" $API POST /v2/sandboxes '{"templateID":"base"}' \
		"Authorization: Basic $(printf '%s:' "$KEY" | base64)"
	refused 401 "list without an API key" $API GET /v2/sandboxes "" ""
	refused 401 "kill of the live one without an API key" $API DELETE "/sandboxes/$S" "" ""
	# envd: no sandbox header, a traversal in it, no token, a wrong token.
	# Start streams its answer (Connect): a refusal is status 200 with
	# an end-of-stream message that carries the error code.
	rpc='{"process":{"cmd":"/bin/touch","args":["/tmp/pwned"]}}'
	BODYPAT='"code":"invalid_argument"'
	refused 200 "envd Start without E2b-Sandbox-Id: invalid_argument" $ENVD POST /process.Process/Start "$rpc" \
		"Connect-Protocol-Version: 1"
	BODYPAT='"code":"unavailable"'
	refused 200 "envd Start with a traversal in E2b-Sandbox-Id: unavailable" $ENVD POST /process.Process/Start "$rpc" \
		"E2b-Sandbox-Id: ../$S" "Connect-Protocol-Version: 1"
	# Without the right token a live sandbox answers as an unknown one.
	BODYPAT='"code":"unavailable"'
	refused 200 "envd Start without an access token: unavailable" $ENVD POST /process.Process/Start "$rpc" \
		"E2b-Sandbox-Id: $S" "Connect-Protocol-Version: 1"
	refused 200 "envd Start with a wrong access token: unavailable" $ENVD POST /process.Process/Start "$rpc" \
		"E2b-Sandbox-Id: $S" "X-Access-Token: 00000000000000000000000000000000" \
		"Connect-Protocol-Version: 1"
	BODYPAT='sandbox not found'
	refused 502 "envd file read with a wrong access token: as an unknown sandbox" \
		$ENVD GET "/files?path=/etc/hostname" "" \
		"E2b-Sandbox-Id: $S" "X-Access-Token: 00000000000000000000000000000000"
	refused 502 "envd file read of an unknown sandbox: the same" \
		$ENVD GET "/files?path=/etc/hostname" "" \
		"E2b-Sandbox-Id: 99999999" "X-Access-Token: 00000000000000000000000000000000"
	BODYPAT=
	# none of those reached the guest
	if [ "$($C exec "$S" -- sh -c 'test -e /tmp/pwned && echo yes || echo no')" = no ]; then
		ok "no refused envd request ran in the sandbox"
	else
		not_ok "no refused envd request ran in the sandbox" "/tmp/pwned exists"
	fi
	if kill -0 "$cubed_pid" 2>/dev/null && healthy &&
	   [ "$(req $API GET "/sandboxes/$S")" = 200 ] &&
	   grep -q '"k": *"v"' $W/body; then
		ok "cubed still answers; the live sandbox kept its record"
	else
		not_ok "cubed still answers; the live sandbox kept its record" \
			"$(head -c 300 $W/body); $(tail -n 5 $W/cubed.log)"
	fi

	behaviour_log
	listing_bound
	big_transfer
	damaged_state
}

# cubed's peak resident memory (VmHWM), KiB
cubed_hwm() {
	sed -n 's/^VmHWM: *\([0-9]*\) kB/\1/p' /proc/$cubed_pid/status
}

# Uploads and downloads stream through cubed: 48 MiB each way raise its
# peak memory by far less than the file, and the bytes come back intact.
big_transfer() {
	head -c $((48 << 20)) /dev/urandom > $W/big
	printf 'POST /files?path=/tmp/big HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nE2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %s\r\n\r\n' \
		"$S" "$TOK" "$(wc -c < $W/big)" > $W/request
	cat $W/big >> $W/request
	before=$(cubed_hwm)
	./http_raw $ENVD $W/request > $W/resp 2>/dev/null
	up=$(sed -n '1s/^HTTP\/1\.[01] \([0-9]*\).*/\1/p' $W/resp)
	rm -f $W/request
	down=$(req $ENVD GET "/files?path=/tmp/big" "" "E2b-Sandbox-Id: $S" \
		"X-Access-Token: $TOK")
	after=$(cubed_hwm)
	grew=$(( (after - before) / 1024 ))
	if [ "$up" = 200 ] && [ "$down" = 200 ] && cmp -s $W/big $W/body &&
	   [ "$grew" -lt 16 ]; then
		ok "48 MiB up and down, intact, through $grew MiB of cubed's memory"
	else
		not_ok "48 MiB up and down, intact, through less than 16 MiB of cubed's memory" \
			"upload $up, download $down, $(wc -c < $W/body) bytes back, peak grew $grew MiB"
	fi
	rm -f $W/big $W/body $W/resp
	$C exec "$S" -- rm -f /tmp/big
}

# A directory listing holds at most 10000 entries in cubed: a guest's
# directory of 10001 is refused with a reason, one of 10000 is listed.
listing_bound() {
	$C exec "$S" -- sh -c 'mkdir -p /tmp/many && cd /tmp/many &&
		seq 10000 | xargs touch && mkdir /tmp/more && cd /tmp/more &&
		seq 10001 | xargs touch' >/dev/null 2>&1
	st=$(req $ENVD POST /filesystem.Filesystem/ListDir \
		'{"path":"/tmp/many","depth":1}' "E2b-Sandbox-Id: $S" \
		"X-Access-Token: $TOK" \
		"Connect-Protocol-Version: 1")
	entries=$(grep -o '"name"' $W/body | wc -l)
	[ "$st" = 200 ] && [ "$entries" = 10000 ] &&
		ok "a listing of 10000 entries is answered whole" ||
		not_ok "a listing of 10000 entries is answered whole" \
			"status $st, $entries entries: $(head -c 200 $W/body)"
	st=$(req $ENVD POST /filesystem.Filesystem/ListDir \
		'{"path":"/tmp","depth":2}' "E2b-Sandbox-Id: $S" \
		"X-Access-Token: $TOK" \
		"Connect-Protocol-Version: 1")
	if [ "$st" = 429 ] && grep -q '"code": *"resource_exhausted"' $W/body &&
	   grep -q 'more than 10000 entries' $W/body; then
		ok "a listing of more is refused: resource_exhausted, with the reason"
	else
		not_ok "a listing of more is refused: resource_exhausted, with the reason" \
			"status $st: $(head -c 200 $W/body)"
	fi
	$C exec "$S" -- rm -rf /tmp/many /tmp/more
}

# The live sandbox's behaviour log: its create by the key's name, a file
# written and read through envd, the command cubectl ran in it; the secret
# planted in an env value, the file's contents, the API key and the envd
# token appear nowhere in the log directory.
behaviour_log() {
	# a command through envd's Start (one Connect envelope: a flag byte,
	# the length in four bytes, the JSON)
	rpc='{"process":{"cmd":"/bin/sh","args":["-c","echo out; exit 4"],"envs":{"RPC_SECRET":"'"$PLANTED"'-rpc"}}}'
	len=${#rpc}
	{
		printf 'POST /process.Process/Start HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nE2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nConnect-Protocol-Version: 1\r\nContent-Type: application/connect+json\r\nContent-Length: %s\r\n\r\n' \
			"$S" "$TOK" $((len + 5))
		printf "\\000\\000\\000\\$(printf %03o $((len / 256)))\\$(printf %03o $((len % 256)))"
		printf '%s' "$rpc"
	} > $W/request
	./http_raw $ENVD $W/request > $W/resp 2>/dev/null
	if wait_for 30 grep -q '"by":"api","argv":\["/bin/sh"' "$CUBE_STATE_DIR/audit/$S.jsonl"; then
		line=$(grep '"by":"api","argv":\["/bin/sh"' "$CUBE_STATE_DIR/audit/$S.jsonl")
	else
		line="no line: $(tail -c 300 $W/resp | tr -d '\000')"
	fi
	case $line in
	*'"event":"command","by":"api","argv":["/bin/sh","-c","echo out; exit 4"]'*'"env":["RPC_SECRET"]'*'"exit":4,'*'"stdout_bytes":4,"stderr_bytes":0'*)
		ok "the behaviour log: a command through envd, its argv, env names, status and output" ;;
	*)
		not_ok "the behaviour log: a command through envd, its argv, env names, status and output" \
			"$line" ;;
	esac
	body="$PLANTED-file"
	printf 'POST /files?path=/tmp/planted.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nE2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %s\r\n\r\n%s' \
		"$S" "$TOK" "${#body}" "$body" > $W/request
	./http_raw $ENVD $W/request > $W/resp 2>/dev/null
	up=$(sed -n '1s/^HTTP\/1\.[01] \([0-9]*\).*/\1/p' $W/resp)
	down=$(req $ENVD GET "/files?path=/tmp/planted.txt" "" "E2b-Sandbox-Id: $S" \
		"X-Access-Token: $TOK")
	if [ "$up" = 200 ] && [ "$down" = 200 ] && [ "$(cat $W/body)" = "$body" ]; then
		ok "a file written and read through envd"
	else
		not_ok "a file written and read through envd" "upload $up, download $down: $(head -c 200 $W/body)"
	fi
	log=$CUBE_STATE_DIR/audit/$S.jsonl
	flat=$(tr -d ' ' < "$log" 2>/dev/null)
	case $flat in
	*'"event":"created","by":"api","key":"ci"'*'"env":["PLANTED_ENV"],"metadata":["k"]'*'"event":"command","by":"cubectl"'*'"event":"file_write","by":"api","path":"/tmp/planted.txt","bytes":'"${#body}"*'"event":"file_read","by":"api","path":"/tmp/planted.txt","bytes":'"${#body}"*)
		ok "the behaviour log: create by the key's name, the command, the file both ways" ;;
	*)
		not_ok "the behaviour log: create by the key's name, the command, the file both ways" \
			"$(head -c 1200 "$log" 2>&1)" ;;
	esac
	# a sandbox past its end: cubed kills it and says so
	req $API POST /v2/sandboxes '{"templateID":"base","timeout":2}' >/dev/null
	S2=$(sed -n 's/.*"sandboxID": *"\([0-9]*\)".*/\1/p' $W/body)
	if [ -n "$S2" ] && wait_for 60 grep -q '"event":"expired","by":"cubed"' \
		"$CUBE_STATE_DIR/audit/$S2.jsonl"; then
		ok "the behaviour log: a sandbox expired by cubed at its end"
	else
		not_ok "the behaviour log: a sandbox expired by cubed at its end" \
			"sandbox '$S2': $(cat "$CUBE_STATE_DIR/audit/$S2.jsonl" 2>&1 | head -c 400)"
	fi
	if grep -rqe "$PLANTED" -e "$KEY" -e "$TOK" "$CUBE_STATE_DIR/audit"; then
		not_ok "no planted secret, key or token in the behaviour log" \
			"$(grep -rhoe "$PLANTED.\{0,20\}" -e "$KEY" -e "$TOK" "$CUBE_STATE_DIR/audit" | head -n 3)"
	else
		ok "no planted secret, key or token in the behaviour log"
	fi
}

# a paused record as cubed writes one (e2b/cube_backend.c)
paused_record() {
	printf '{"end_at":%s,"token":"%s","e2b_id":"%s","started_at":%s,"network":{},"metadata":{},"env":{},"template":"base","vcpus":1,"memory_mb":256,"snapshot":"%s"}' \
		"$(($(date +%s) + 3600))" 0123456789abcdef0123456789abcdef "$1" \
		"$(date +%s)" "$W/snap-$2"
}

damaged_state() {
	if stop_cubed; then
		ok "cubed stops on SIGTERM with status 0"
	else
		not_ok "cubed stops on SIGTERM with status 0" "$(tail -n 5 $W/cubed.log)"
	fi
	p=$CUBE_STATE_DIR/paused
	mkdir -p "$p" "$W/snap-900007" "$W/snap-900005"
	printf '{"end_at":1,"token":"0123456789abcdef0123' > "$p/900001.json"
	head -c 512 /dev/urandom > "$p/900002.json"
	printf '{"e2b_id":900003,"token":[1],"template":{},"snapshot":5,"end_at":"soon","vcpus":"x"}' \
		> "$p/900003.json"
	: > "$p/900004.json"
	paused_record 900006 900005 > "$p/900005.json"
	paused_record 900007 900007 > "$p/900007.json"
	for t in broken1 broken2 broken3; do
		mkdir -p "$CUBE_STATE_DIR/templates/$t"
	done
	printf 'kernel=/boot/vmlinuz\nvcpus=abc\n' > "$CUBE_STATE_DIR/templates/broken1/template.conf"
	head -c 300 /dev/urandom | tr -d '=' > "$CUBE_STATE_DIR/templates/broken2/template.conf"
	printf 'kernel=/boot/vmlinuz\nmemory=99999999\n' > "$CUBE_STATE_DIR/templates/broken3/template.conf"
	echo garbage > "$CUBE_STATE_DIR/e2b-last-id"
	(cd "$CUBE_STATE_DIR" && md5sum paused/*.json templates/broken*/template.conf e2b-last-id) > $W/damaged.md5
	: > $W/cubed.log

	if start_cubed; then
		ok "cubed starts on the damaged state directory and answers"
	else
		not_ok "cubed starts on the damaged state directory and answers" "$(cat $W/cubed.log)"
		return
	fi
	st=$(req $API GET /v2/sandboxes)
	ids=$(grep -o '"sandboxID": *"[0-9]*"' $W/body | grep -o '[0-9][0-9]*' | sort | tr '\n' ' ')
	if [ "$st" = 200 ] && [ "$ids" = "$S 900007 " ]; then
		ok "the list holds the live sandbox and the good paused record only"
	else
		not_ok "the list holds the live sandbox and the good paused record only" \
			"status $st, ids '$ids', want '$S 900007 '"
	fi
	bad=
	for i in 900001 900002 900003 900004 900005 900006; do
		[ "$(req $API GET /sandboxes/$i)" = 404 ] || bad="$bad $i"
	done
	[ -z "$bad" ] && ok "no damaged record can be got (404)" ||
		not_ok "no damaged record can be got (404)" "answered for:$bad"
	miss=
	for i in 900001 900002 900003 900004 900005; do
		grep -q "ignoring the damaged paused sandbox record .*/$i\.json" $W/cubed.log ||
			miss="$miss $i.json"
	done
	for t in broken1 broken2 broken3; do
		grep -q "ignoring the damaged template $t" $W/cubed.log || miss="$miss $t"
	done
	grep -q "e2b-last-id is damaged" $W/cubed.log || miss="$miss e2b-last-id"
	if [ -z "$miss" ] && ! grep -q '900007\|template base' $W/cubed.log; then
		ok "the log names each damaged file, and no good one"
	else
		not_ok "the log names each damaged file, and no good one" \
			"not named:$miss; log: $(cat $W/cubed.log)"
	fi
	refused 500 "create from a damaged template" $API POST /v2/sandboxes '{"templateID":"broken1"}'
	if grep -q "template 'broken1' is damaged" $W/body; then
		ok "the refusal names the damaged template"
	else
		not_ok "the refusal names the damaged template" "$(head -c 300 $W/body)"
	fi
	(cd "$CUBE_STATE_DIR" && md5sum -c $W/damaged.md5) > $W/md5.out 2>&1
	st=$?
	[ $st = 0 ] && ok "cubed changed and removed none of the damaged files" ||
		not_ok "cubed changed and removed none of the damaged files" "$(grep -v ': OK' $W/md5.out)"
	# a new sandbox's id collides with no live or paused one, and the id
	# counter is written again with it
	st=$(req $API POST /v2/sandboxes '{"templateID":"base","timeout":600}')
	N=$(sed -n 's/.*"sandboxID": *"\([0-9]*\)".*/\1/p' $W/body)
	last=$(cat "$CUBE_STATE_DIR/e2b-last-id" 2>&1)
	if [ "$st" = 201 ] && [ -n "$N" ] && [ "$N" != "$S" ] && [ "$N" != 900007 ] &&
	   [ "$last" = "$N" ]; then
		ok "a create after the restart gets a fresh id ($N), and the counter holds it"
	else
		not_ok "a create after the restart gets a fresh id, and the counter holds it" \
			"status '$st', id '$N', e2b-last-id '$last': $(head -c 300 $W/body)"
	fi

	# nothing left behind: kill what this test made, then count
	stop_cubed
	[ -n "$N" ] && $C kill "$N" >/dev/null 2>&1
	$C kill "$S" >/dev/null 2>&1
	wait_for 60 no_sandbox
	st=$?
	wait_for 30 no_vmm && [ $st = 0 ]
	[ $? = 0 ] && ok "no sandbox and no VMM process is left" ||
		not_ok "no sandbox and no VMM process is left" "$($C ls); $(vmm_procs) VMM processes"
}

PLAN=$((34 + $(echo "$API_CASES" | grep -c '^[0-9]')))
echo "KTAP version 1"
echo "1..$PLAN"
rm -rf $W
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"
start=$(date +%s)
run
while [ "$n" -lt "$PLAN" ]; do
	not_ok "not run" "an earlier step failed, so this result was never reached"
done
echo "# e2b_input_test.sh: $(($(date +%s) - start)) s"
cleanup
exit $failed
