/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_audit.h: the control plane's lines in the behaviour log
 * (lib/cube_audit.h): what an API client did to a sandbox, by the name of
 * the key it used (never the key), written once the request succeeded.
 */
#ifndef CUBE_E2B_AUDIT_H
#define CUBE_E2B_AUDIT_H

#include "e2b_http.h"
#include "e2b_route.h"

/**
 * e2b_audit_control() - log a control-plane request that succeeded
 * @rt: its route
 * @req: the request (its body is read again, for names and sizes only)
 * @resp: the answer; nothing is logged unless its status is 2xx
 * @key_name: the name of the API key it came with
 */
void e2b_audit_control(const struct e2b_route *rt,
		       const struct e2b_request *req,
		       const struct e2b_response *resp, const char *key_name);

#endif
