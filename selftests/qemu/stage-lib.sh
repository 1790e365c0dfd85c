# SPDX-License-Identifier: GPL-2.0
# Helpers for staging files into an initramfs root; sourced by the mk*.sh scripts.

# stage_file SRC DST_IN_ROOT: copy one file, keeping its mode.
stage_file() {
	mkdir -p "$ROOT/$(dirname "$2")"
	cp -L --preserve=mode "$1" "$ROOT/$2"
}

# stage_libs FILE: copy every shared library the executable FILE needs.
stage_libs() {
	ldd "$1" 2>/dev/null | while read -r a b c _; do
		case $a in
		/*) lib=$a ;;
		*) [ "$b" = "=>" ] && lib=$c || lib= ;;
		esac
		case $lib in /*) [ -e "$ROOT$lib" ] || stage_file "$lib" "$lib" ;; esac
	done
}

# stage_bin PATH [DST]: copy an executable and the shared libraries it needs.
stage_bin() {
	stage_file "$1" "${2:-$1}"
	stage_libs "$1"
}

# pack_cpio OUT: write ROOT as a reproducible gzip'd newc archive, replacing
# OUT only when its content changed.
pack_cpio() {
	find "$ROOT" -exec touch -h -d @0 {} +
	(cd "$ROOT" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --reproducible --quiet -R 0:0) |
		gzip -n -1 > "$1.tmp"
	if cmp -s "$1.tmp" "$1"; then
		rm -f "$1.tmp"
	else
		mv "$1.tmp" "$1"
	fi
}
