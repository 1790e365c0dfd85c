/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_fake_backend.h: a backend for the E2B dispatch harness.  It knows one
 * running sandbox, FAKE_SANDBOX (envd token FAKE_TOKEN), answers every
 * operation with a small well-formed result, and, while fake_fail is set,
 * refuses every operation with that errno instead, so the handlers' error
 * paths run too.  Processes and watches give a few events and end.
 */
#ifndef CUBE_FUZZ_E2B_FAKE_BACKEND_H
#define CUBE_FUZZ_E2B_FAKE_BACKEND_H

#include "e2b_backend.h"

#define FAKE_SANDBOX	"isb1"
#define FAKE_TOKEN	"tok"

extern const struct e2b_backend_ops fake_ops;
/* 0, or the positive errno every operation fails with */
extern int fake_fail;

#endif /* CUBE_FUZZ_E2B_FAKE_BACKEND_H */
