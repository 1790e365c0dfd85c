#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# audit_test.sh: the behaviour log of real sandboxes.  cubectl create,
# exec, cp and kill, the sandbox's network counters and its end each leave
# their line in
# `cubectl audit`, with what ran (argv, cwd, user, exit status, output
# bytes, environment names) and what was copied (path, size); a secret
# planted in an environment variable's value, in a label's value and in a
# file's contents appears nowhere in the log directory.  Bad ids are usage
# errors, an id without a log is "not found", and an unwritable log fails
# no sandbox operation.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh

C=./cubectl
W=/tmp/audit-test
export CUBE_STATE_DIR=$W/state CUBE_RUN_DIR=$W/run
rm -rf $W
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"
SECRET=planted-secret-5d41402abc4b2a76

id=
cleanup() {
	[ -n "$id" ] && $C kill $id >/dev/null 2>&1
	$C template rm base >/dev/null 2>&1
	rm -rf $W
}
trap cleanup EXIT

# has EVENT: the log of $id has an EVENT line (from $W/log.json)
has() {
	grep -q "\"event\": *\"$1\"" $W/log.json
}

exited_logged() {
	$C --json audit "$id" > $W/log.json && has exited
}

ktap_plan 13
rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
cp "$rootfs" $W/rootfs.ext4
expect "template builds" 0 $C template build base --kernel /boot/vmlinuz \
	--initrd ./initramfs.cpio.gz --rootfs $W/rootfs.ext4 \
	--append cube.rootfstype=ext4
id=$($C create --template base --label "owner=$SECRET")
[ -n "$id" ] && ok "a sandbox is created" ||
	not_ok "a sandbox is created" "no id"

$C exec --env "API_TOKEN=$SECRET" --cwd /tmp "$id" -- \
	sh -c 'echo hello; echo oops >&2; exit 3' >/dev/null 2>&1
printf 'contents %s\n' "$SECRET" > $W/upload
$C cp $W/upload "$id:/tmp/secret.txt"
$C cp "$id:/tmp/secret.txt" $W/download
cmp -s $W/upload $W/download && ok "the file went there and back" ||
	not_ok "the file went there and back" "$(cat $W/download)"
$C kill "$id" >/dev/null

if wait_until 30 exited_logged; then
	ok "the sandbox's end is logged after its kill"
else
	not_ok "the sandbox's end is logged after its kill" "$(cat $W/log.json)"
fi
# the order of what happened
events=$(sed -n 's/.*"event": *"\([a-z_]*\)".*/\1/p' $W/log.json | tr '\n' ' ')
# (cubectl logs its kill once the module took it: the shim's lines at the
# end, what the network dropped and then the exit, may come first)
case $events in
"created command file_write file_read killed network exited "|\
"created command file_write file_read network killed exited "|\
"created command file_write file_read network exited killed ")
	ok "events: $events" ;;
*)
	not_ok "events in order" "got '$events'" ;;
esac

# the command line: what ran and how it ended, the variable's name only
tr -d ' \n' < $W/log.json > $W/flat
cmdline=$(sed -n 's/.*\("event":"command"[^}]*\)}.*/\1/p' $W/flat)
case $cmdline in
*'"argv":["sh","-c","echo hello; echo oops >&2; exit 3"]'*) ;;
*'"argv":["sh","-c","echohello;echooops>&2;exit3"]'*) ;;
*) cmdline="bad argv: $cmdline" ;;
esac
case $cmdline in
*'"cwd":"/tmp"'*'"user":"root"'*'"API_TOKEN"'*'"exit":3'*'"stdout_bytes":6,"stderr_bytes":5'*)
	ok "the command's argv, cwd, user, env names, status and output bytes" ;;
*)
	not_ok "the command's argv, cwd, user, env names, status and output bytes" "$cmdline" ;;
esac
size=$(wc -c < $W/upload)
[ "$(grep -o "\"path\":\"/tmp/secret.txt\",\"bytes\":$size," $W/flat | wc -l)" = 2 ] &&
	ok "copies: path and size, both ways" ||
	not_ok "copies: path and size, both ways" "$(grep -o '"event":"file_[^}]*' $W/flat)"
grep -q '"labels":\["owner"\]' $W/flat &&
	ok "created: the label's name" ||
	not_ok "created: the label's name" "$(grep -o '"event":"created[^}]*' $W/flat)"

# the planted secret is nowhere: not in an env value, a label value or a
# file's contents
if grep -rq "$SECRET" "$CUBE_STATE_DIR/audit"; then
	not_ok "no planted secret in the log" "$(grep -r "$SECRET" "$CUBE_STATE_DIR/audit" | head -c 300)"
else
	ok "no planted secret in the log"
fi
# the table for people has one row per event under a header
rows=$($C audit "$id" | wc -l)
[ "$rows" = 8 ] && ok "the table: a header and a row per event" ||
	not_ok "the table: a header and a row per event" "$rows lines"

expect "a bad id is a usage error" 2 $C audit ../etc
expect "an id without a log is not found" 3 $C audit 987654321

# a log that cannot be written fails nothing
CUBE_AUDIT_DIR=/proc/cube-no-audit
export CUBE_AUDIT_DIR
id=$($C create --template base)
out=$($C exec "$id" -- echo still-works 2>&1)
[ "$out" = still-works ] && $C kill "$id" >/dev/null && id= &&
	ok "an unwritable log fails no operation" ||
	not_ok "an unwritable log fails no operation" "create/exec/kill: '$id' '$out'"
unset CUBE_AUDIT_DIR
ktap_finish 13
exit $ktap_failed
