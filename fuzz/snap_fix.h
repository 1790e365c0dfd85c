/* SPDX-License-Identifier: GPL-2.0 */
/* snap_fix.h: make a mutated state file's checksums and size agree. */
#ifndef CUBE_FUZZ_SNAP_FIX_H
#define CUBE_FUZZ_SNAP_FIX_H

#include <stddef.h>
#include <stdint.h>

/*
 * Sets the header's file size to @len and every checksum the parser checks
 * (the header's, each whole section's) to what it computes, so mutations
 * reach what lies behind them.  Sections are walked as the parser walks
 * them, and the walk stops where one does not fit.
 */
void snap_fix(uint8_t *buf, size_t len);

#endif /* CUBE_FUZZ_SNAP_FIX_H */
