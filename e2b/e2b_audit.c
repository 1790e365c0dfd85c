// SPDX-License-Identifier: GPL-2.0
/* The control plane's behaviour log lines; see e2b_audit.h. */
#include <stdio.h>
#include <string.h>

#include "cube_audit.h"
#include "e2b_audit.h"
#include "e2b_json.h"

static struct json_object *kv_names(const struct e2b_kvs *kvs)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; a && i < kvs->n && i < CUBE_AUDIT_LIST_MAX; i++)
		json_object_array_add(a, cube_audit_str(kvs->v[i].key));
	return a;
}

static const char *tristate(enum e2b_tristate t)
{
	return t == E2B_TRUE ? "allowed" : t == E2B_FALSE ? "denied" : "default";
}

/* the string field @key of a JSON answer, into @buf */
static bool answer_str(const struct e2b_response *resp, const char *key,
		       char *buf, size_t len)
{
	struct json_object *o, *v;
	bool ok = false;

	if (!resp->body || !resp->len)
		return false;
	o = json_tokener_parse(resp->body);
	if (o && json_object_object_get_ex(o, key, &v) &&
	    json_object_is_type(v, json_type_string)) {
		snprintf(buf, len, "%s", json_object_get_string(v));
		ok = true;
	}
	json_object_put(o);
	return ok;
}

static void created(const struct e2b_request *req,
		    const struct e2b_response *resp, struct json_object *f)
{
	struct e2b_new_sandbox ns;
	char err[E2B_MSG_MAX], id[E2B_ID_MAX + 1];

	if (!answer_str(resp, "sandboxID", id, sizeof(id))) {
		json_object_put(f);
		return;
	}
	if (!e2b_parse_new_sandbox(req->body, req->body_len, &ns, err)) {
		json_object_object_add(f, "template",
				       cube_audit_str(ns.template_id));
		json_object_object_add(f, "timeout_s",
				       json_object_new_int64(ns.timeout));
		json_object_object_add(f, "env", kv_names(&ns.env));
		json_object_object_add(f, "metadata", kv_names(&ns.metadata));
		json_object_object_add(f, "internet", json_object_new_string(
			tristate(ns.net.internet)));
		json_object_object_add(f, "allow_out",
				       json_object_new_int64(ns.net.n_allow));
		json_object_object_add(f, "deny_out",
				       json_object_new_int64(ns.net.n_deny));
		json_object_object_add(f, "auto_pause",
				       json_object_new_boolean(ns.auto_pause));
		e2b_new_sandbox_free(&ns);
	}
	cube_audit(id, "created", "api", f);
}

void e2b_audit_control(const struct e2b_route *rt,
		       const struct e2b_request *req,
		       const struct e2b_response *resp, const char *key_name)
{
	struct json_object *f;
	const char *event = NULL;
	char err[E2B_MSG_MAX];

	if (resp->status < 200 || resp->status > 299)
		return;
	switch (rt->id) {
	case E2B_R_CREATE:
		event = "created";
		break;
	case E2B_R_KILL:
		event = "killed";
		break;
	case E2B_R_TIMEOUT:
		event = "timeout_set";
		break;
	case E2B_R_CONNECT:
	case E2B_R_RESUME:
		event = "connected";
		break;
	case E2B_R_PAUSE:
		event = "paused";
		break;
	case E2B_R_FORK:
		event = "forked";
		break;
	case E2B_R_SNAPSHOT:
		event = "snapshot";
		break;
	case E2B_R_NETWORK:
		event = "network_set";
		break;
	case E2B_R_CP_CREATE:
		event = "checkpoint";
		break;
	case E2B_R_CP_DELETE:
		event = "checkpoint_rm";
		break;
	case E2B_R_ROLLBACK:
		event = "rollback";
		break;
	default:
		return;		/* reads change nothing */
	}
	f = json_object_new_object();
	if (!f)
		return;
	json_object_object_add(f, "key", cube_audit_str(key_name));
	json_object_object_add(f, "status", json_object_new_int(resp->status));
	if (rt->id == E2B_R_CREATE) {
		created(req, resp, f);
		return;
	}
	if (rt->id == E2B_R_TIMEOUT) {
		unsigned int secs;
		bool given;

		if (!e2b_parse_timeout(req->body, req->body_len, true, &secs,
				       &given, err))
			json_object_object_add(f, "timeout_s",
					       json_object_new_int64(secs));
	} else if (rt->id == E2B_R_NETWORK) {
		struct e2b_net n;

		e2b_net_init(&n);
		if (!e2b_parse_network_update(req->body, req->body_len, &n,
					      err)) {
			json_object_object_add(f, "internet",
				json_object_new_string(tristate(n.internet)));
			json_object_object_add(f, "allow_out", cube_audit_strv(
				(const char *const *)n.allow_out, n.n_allow));
			json_object_object_add(f, "deny_out", cube_audit_strv(
				(const char *const *)n.deny_out, n.n_deny));
		}
		e2b_net_free(&n);
	} else if (rt->id == E2B_R_CP_DELETE) {
		json_object_object_add(f, "checkpoint", cube_audit_str(rt->arg));
	} else if (rt->id == E2B_R_CP_CREATE || rt->id == E2B_R_ROLLBACK) {
		char name[E2B_CP_NAME_MAX + 1];

		/* the checkpoint's name, or the rollback's target */
		if (answer_str(resp, rt->id == E2B_R_CP_CREATE ? "name" : "target",
			       name, sizeof(name)))
			json_object_object_add(f, "checkpoint", cube_audit_str(name));
	} else if (rt->id == E2B_R_FORK) {
		char id[E2B_ID_MAX + 1];

		if (answer_str(resp, "sandboxID", id, sizeof(id)))
			json_object_object_add(f, "child", cube_audit_str(id));
	}
	cube_audit(rt->sandbox, event, "api", f);
}
