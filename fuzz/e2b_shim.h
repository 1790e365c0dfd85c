/* SPDX-License-Identifier: GPL-2.0 */
/* e2b_shim.h: the sandbox port the dispatch harness hands e2b_forward(). */
#ifndef CUBE_FUZZ_E2B_SHIM_H
#define CUBE_FUZZ_E2B_SHIM_H

/* taken (and owned) by the next e2b_proxy_dial(); -1: refused */
extern int fuzz_port_fd;

#endif /* CUBE_FUZZ_E2B_SHIM_H */
