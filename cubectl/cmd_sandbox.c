// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_sandbox.c: cubectl create, fork, kill, ls, inspect, logs, stats.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cube_audit.h"
#include "cube_backend.h"
#include "cube_net.h"
#include "cube_runtime.h"
#include "cubectl.h"
#include "nl_client.h"

#define OPT_JSON	1000

static int bad_usage(const char *cmd, const char *syn)
{
	return cc_err(EX_USAGE, "usage: %s %s %s", cc_prog, cmd, syn);
}

/* --- create --- */

static int launch_error(int ret, const char *err)
{
	if (ret == -ENOPKG)
		return cc_err(EX_NOMODULE, "cube.ko is not loaded: %s", err);
	return cc_err(cc_code(ret), "cannot create the sandbox: %s",
		      err[0] ? err : strerror(-ret));
}

/*
 * The behaviour log's "created" line: the template, the limits, the network
 * policy and the label names (a label's value is the user's, and may be
 * anything).
 */
static void audit_created(uint64_t id, const struct cube_launch *l,
			  unsigned long timeout, bool pooled)
{
	struct json_object *f = json_object_new_object();
	struct json_object *keys = json_object_new_array();
	unsigned int i;

	if (!f || !keys) {
		json_object_put(f);
		json_object_put(keys);
		return;
	}
	json_object_object_add(f, "template", cube_audit_str(l->tmpl->name));
	json_object_object_add(f, "vcpus", json_object_new_int64(
		l->vcpus ? l->vcpus : l->tmpl->vcpus));
	json_object_object_add(f, "memory_mb", json_object_new_int64(
		l->memory_mb ? l->memory_mb : l->tmpl->memory_mb));
	json_object_object_add(f, "timeout_s", json_object_new_int64(timeout));
	json_object_object_add(f, "disk_mb", json_object_new_int64(
		(l->disk_bytes ? l->disk_bytes : l->tmpl->disk_bytes) >> 20));
	json_object_object_add(f, "net", json_object_new_string(
		l->net ? cube_net_mode_name(l->net->mode) :
		l->tmpl->net ? "internet" : "none"));
	json_object_object_add(f, "pooled", json_object_new_boolean(pooled));
	for (i = 0; i < l->nlabels; i++)
		json_object_array_add(keys, cube_audit_str(l->labels[i].key));
	json_object_object_add(f, "labels", keys);
	cube_audit_id(id, "created", "cubectl", f);
}

int cmd_create(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "template", required_argument, NULL, 't' },
		{ "vcpus", required_argument, NULL, 'c' },
		{ "memory", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "net", required_argument, NULL, 'n' },
		{ "label", required_argument, NULL, 'l' },
		{ "disk", required_argument, NULL, 'D' },
		{ "no-merge", no_argument, NULL, 'M' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	struct cube_label_kv labels[CUBE_LABELS_MAX];
	const char *tname = "default";
	struct cube_launch l = { .labels = labels };
	unsigned long vcpus = 0, mem = 0, timeout = 0;
	char err[CUBE_ERR_MAX] = "";
	struct cube_template t;
	struct cube_nl *nl;
	uint64_t id = 0;
	bool pooled;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			if (!cube_name_valid(optarg))
				return cc_err(EX_USAGE, "invalid template name '%s' ([A-Za-z0-9._-], at most %d bytes)",
					      optarg, CUBE_NAME_MAX - 1);
			tname = optarg;
			break;
		case 'c':
			if (cc_parse_uint("--vcpus", optarg, 1, 16, &vcpus))
				return EX_USAGE;
			break;
		case 'm':
			if (cc_parse_uint("--memory", optarg, 32, 3072, &mem))
				return EX_USAGE;
			break;
		case 'T':
			if (cc_parse_uint("--timeout", optarg, 1, 86400, &timeout))
				return EX_USAGE;
			break;
		case 'D':
			if (cube_parse_disk_size(optarg, &l.disk_bytes))
				return cc_err(EX_USAGE, "--disk %s: a size from 16M to 16T in whole MiB (e.g. 4G)",
					      optarg);
			break;
		case 'n': {
			static struct cube_net_policy np;
			char nerr[CUBE_NET_ERR_MAX];
			int r = cube_net_policy_parse_arg(optarg, &np, nerr);

			if (r)
				return cc_err(EX_USAGE, "invalid --net policy: %s", nerr);
			l.net = &np;
			break;
		}
		case 'l':
			if (l.nlabels >= CUBE_LABELS_MAX)
				return cc_err(EX_USAGE, "at most %d labels", CUBE_LABELS_MAX);
			if (cc_parse_label(optarg, labels[l.nlabels].key,
					   sizeof(labels[0].key),
					   labels[l.nlabels].value,
					   sizeof(labels[0].value)))
				return EX_USAGE;
			l.nlabels++;
			break;
		case 'M':
			l.no_merge = true;
			break;
		case OPT_JSON:
			c->json = true;
			break;
		default:
			return bad_usage("create", "[--template T] [--vcpus N] [--memory MIB] [--timeout S] [--disk SIZE] [--net none|deny|internet|FILE] [--no-merge] [--label K=V]...");
		}
	}
	if (optind != argc)
		return cc_err(EX_USAGE, "create takes no arguments ('%s')", argv[optind]);
	ret = cube_template_load(tname, &t, err);
	if (ret)
		return cc_err(ret == -ENOENT ? EX_NOTFOUND : EX_FAIL, "%s", err);
	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	l.tmpl = &t;
	l.vcpus = vcpus;
	l.memory_mb = mem;
	/*
	 * A warm sandbox fits when nothing asks for a different one.  Its
	 * network is up already (policy internet): another policy but none
	 * is swapped in before anyone has its id, so a pool saves the
	 * network set-up too.
	 */
	ret = -ENOENT;
	if (!vcpus && !mem && !l.nlabels && !l.disk_bytes && !l.no_merge &&
	    (!l.net || (t.net && l.net->mode != CUBE_NET_NONE)))
		ret = cube_nl_pool_take(nl, t.name, &id, NULL);
	if (ret == -EPERM || ret == -EACCES) {
		cube_nl_close(nl);
		return cc_errno(ret, "pool");
	}
	if (!ret && l.net) {
		struct cube_net_handle h;
		char nerr[CUBE_NET_ERR_MAX] = "";

		ret = cube_net_open(id, &h);
		if (!ret) {
			ret = cube_net_set_policy(&h, l.net, nerr);
			cube_net_handle_close(&h);
		}
		if (ret) {
			/* not with the pool's policy: start a fresh one */
			cube_nl_sandbox_kill(nl, id, 0);
			ret = -ENOENT;
		}
	}
	pooled = !ret;
	if (ret) {
		/*
		 * The shim records the end time before it marks the sandbox
		 * running: cubed, which adopts running sandboxes and writes
		 * their e2b.json, never sees it without one.
		 */
		l.end_after = timeout;
		ret = cube_sandbox_launch(&l, &id, err);
		if (ret) {
			cube_nl_close(nl);
			return launch_error(ret, err);
		}
	} else if (timeout) {
		/* taken from a pool: cube_meta_write_end() locks out cubed */
		ret = cube_meta_write_end(id, time(NULL) + timeout);
		if (ret) {
			/* no half-configured sandbox stays behind */
			cube_nl_sandbox_kill(nl, id, 0);
			cube_nl_close(nl);
			return cc_err(EX_FAIL, "cannot record the timeout: %s",
				      strerror(-ret));
		}
	}
	cube_nl_close(nl);
	audit_created(id, &l, timeout, pooled);
	if (c->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "id", json_object_new_int64(id));
		cc_json_print(o);
	} else {
		printf("%llu\n", (unsigned long long)id);
	}
	return EX_OK;
}

/* --- fork --- */

int cmd_fork(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	char err[CUBE_ERR_MAX] = "";
	struct cube_nl_sandbox sb;
	struct cube_nl *nl;
	uint64_t id, nid;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != OPT_JSON)
			return bad_usage("fork", "ID");
		c->json = true;
	}
	if (optind + 1 != argc)
		return bad_usage("fork", "ID");
	if (cc_parse_id(argv[optind], &id))
		return EX_USAGE;
	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	ret = cube_nl_sandbox_get(nl, id, &sb);
	cube_nl_close(nl);
	if (ret)
		return cc_errno(ret, argv[optind]);
	if (sb.state != CUBE_SANDBOX_RUNNING)
		return cc_err(EX_CONFLICT, "sandbox %s is %s, not running",
			      argv[optind], cube_nl_state_name(sb.state));
	ret = cube_sandbox_fork(id, sb.template_name, &nid, err);
	if (ret)
		return launch_error(ret, err);
	{
		struct json_object *f = json_object_new_object();

		if (f)
			json_object_object_add(f, "parent",
					       json_object_new_int64(id));
		cube_audit_id(nid, "created", "cubectl", f);
		f = json_object_new_object();
		if (f)
			json_object_object_add(f, "child",
					       json_object_new_int64(nid));
		cube_audit_id(id, "forked", "cubectl", f);
	}
	if (c->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "id", json_object_new_int64(nid));
		json_object_object_add(o, "parent", json_object_new_int64(id));
		cc_json_print(o);
	} else {
		printf("%llu\n", (unsigned long long)nid);
	}
	return EX_OK;
}

/* --- kill --- */

int cmd_kill(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "grace", required_argument, NULL, 'g' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long grace = 0;
	struct cube_nl *nl;
	int opt, ret, i, rc = EX_OK;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'g':
			if (cc_parse_uint("--grace", optarg, 1, 60000, &grace))
				return EX_USAGE;
			break;
		case OPT_JSON:
			c->json = true;
			break;
		default:
			return bad_usage("kill", "[--grace MS] ID...");
		}
	}
	if (optind >= argc)
		return bad_usage("kill", "[--grace MS] ID...");
	/* every id is checked before anything is killed */
	for (i = optind; i < argc; i++) {
		uint64_t id;

		if (cc_parse_id(argv[i], &id))
			return EX_USAGE;
	}
	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	for (i = optind; i < argc; i++) {
		uint64_t id;

		cube_parse_id(argv[i], &id);
		ret = cube_nl_sandbox_kill(nl, id, grace);
		if (ret) {
			int code = cc_errno(ret, argv[i]);

			if (rc == EX_OK)
				rc = code;
			continue;
		}
		cube_audit_id(id, "killed", "cubectl", NULL);
		if (!c->json)
			printf("%s\n", argv[i]);
	}
	cube_nl_close(nl);
	return rc;
}

/* --- ls / inspect --- */

static struct json_object *sandbox_json(const struct cube_nl_sandbox *s)
{
	struct json_object *o = json_object_new_object();
	struct json_object *lab = json_object_new_object();
	unsigned int i;

	json_object_object_add(o, "id", json_object_new_int64(s->id));
	json_object_object_add(o, "state",
			       json_object_new_string(cube_nl_state_name(s->state)));
	if (s->state == CUBE_SANDBOX_EXITED)
		json_object_object_add(o, "exit_reason",
				       json_object_new_string(cube_nl_exit_name(s->exit_reason)));
	json_object_object_add(o, "template",
			       json_object_new_string(s->template_name));
	json_object_object_add(o, "pool", json_object_new_string(s->pool));
	json_object_object_add(o, "pooled",
			       json_object_new_boolean(s->flags & CUBE_SANDBOX_F_POOLED));
	json_object_object_add(o, "owner_pid", json_object_new_int64(s->owner_pid));
	json_object_object_add(o, "owner_uid", json_object_new_int64(s->owner_uid));
	json_object_object_add(o, "vcpus", json_object_new_int64(s->vcpus));
	json_object_object_add(o, "vm_vcpus", json_object_new_int64(s->vm_vcpus));
	json_object_object_add(o, "memory_bytes", json_object_new_int64(s->memory));
	json_object_object_add(o, "private_pages",
			       json_object_new_int64(s->private_pages));
	json_object_object_add(o, "shared_pages",
			       json_object_new_int64(s->shared_pages));
	json_object_object_add(o, "bpf_links", json_object_new_int64(s->bpf_links));
	json_object_object_add(o, "created_ns", json_object_new_int64(s->created_ns));
	json_object_object_add(o, "flags", json_object_new_int64(s->flags));
	for (i = 0; i < s->nlabels; i++)
		json_object_object_add(lab, s->labels[i].key,
				       json_object_new_string(s->labels[i].value));
	json_object_object_add(o, "labels", lab);
	return o;
}

static const char *state_col(const struct cube_nl_sandbox *s)
{
	if (s->flags & CUBE_SANDBOX_F_POOLED)
		return "pooled";
	return cube_nl_state_name(s->state);
}

int cmd_ls(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	struct cube_nl_sandbox *v;
	struct cube_nl *nl;
	size_t n, i;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != OPT_JSON)
			return bad_usage("ls", "[--json]");
		c->json = true;
	}
	if (optind != argc)
		return bad_usage("ls", "[--json]");
	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	ret = cube_nl_sandbox_dump(nl, &v, &n);
	cube_nl_close(nl);
	if (ret)
		return cc_errno(ret, "sandbox list");
	if (c->json) {
		struct json_object *arr = json_object_new_array();

		for (i = 0; i < n; i++)
			json_object_array_add(arr, sandbox_json(&v[i]));
		cc_json_print(arr);
	} else {
		printf("%-8s %-9s %-16s %5s %7s %7s %s\n", "ID", "STATE",
		       "TEMPLATE", "VCPUS", "MEMORY", "CREATED", "LABELS");
		for (i = 0; i < n; i++) {
			char mem[16], age[16], labels[256] = "";
			size_t off = 0;
			unsigned int j;

			cc_bytes(v[i].memory, mem, sizeof(mem));
			cc_age(v[i].created_ns, age, sizeof(age));
			for (j = 0; j < v[i].nlabels && off < sizeof(labels); j++)
				off += snprintf(labels + off, sizeof(labels) - off,
						"%s%s=%s", j ? "," : "",
						v[i].labels[j].key,
						v[i].labels[j].value);
			printf("%-8llu %-9s %-16s %5u %7s %7s %s\n",
			       (unsigned long long)v[i].id, state_col(&v[i]),
			       v[i].template_name[0] ? v[i].template_name : "-",
			       v[i].vcpus, mem, age, labels[0] ? labels : "-");
		}
	}
	free(v);
	return EX_OK;
}

static int get_one(const char *arg, struct cube_nl_sandbox *sb)
{
	struct cube_nl *nl;
	uint64_t id;
	int ret;

	if (cc_parse_id(arg, &id))
		return EX_USAGE;
	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	ret = cube_nl_sandbox_get(nl, id, sb);
	cube_nl_close(nl);
	if (ret) {
		char what[64];

		snprintf(what, sizeof(what), "sandbox %s", arg);
		return cc_errno(ret, what);
	}
	return EX_OK;
}

int cmd_inspect(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	struct cube_nl_sandbox sb;
	struct json_object *o;
	char rundir[PATH_MAX];
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != OPT_JSON)
			return bad_usage("inspect", "ID");
		c->json = true;
	}
	if (optind + 1 != argc)
		return bad_usage("inspect", "ID");
	ret = get_one(argv[optind], &sb);
	if (ret)
		return ret;
	o = sandbox_json(&sb);
	cube_sandbox_path(rundir, sizeof(rundir), sb.id, NULL);
	json_object_object_add(o, "run_dir", json_object_new_string(rundir));
	if (c->json) {
		cc_json_print(o);
		return EX_OK;
	}
	json_object_object_foreach(o, key, val) {
		if (json_object_is_type(val, json_type_object)) {
			printf("%-14s", key);
			if (!json_object_object_length(val))
				printf(" -");
			json_object_object_foreach(val, lk, lv)
				printf(" %s=%s", lk, json_object_get_string(lv));
			putchar('\n');
		} else {
			printf("%-14s %s\n", key, json_object_get_string(val));
		}
	}
	json_object_put(o);
	return EX_OK;
}

/* --- logs --- */

/*
 * Write @n bytes of a guest's console to a terminal: control characters
 * (escape sequences could retitle or rewrite the user's terminal) come out
 * as \xNN; tabs, line ends and UTF-8 text pass.
 */
static void write_escaped(const unsigned char *b, size_t n, bool cr_next)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char ch = b[i];
		bool crlf = ch == '\r' && (i + 1 < n ? b[i + 1] == '\n' : cr_next);

		if ((ch < 0x20 && ch != '\n' && ch != '\t' && !crlf) ||
		    ch == 0x7f)
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
}

int cmd_logs(struct cctx *c, int argc, char **argv)
{
	struct cube_nl_sandbox sb;
	char path[PATH_MAX], buf[65536];
	int ret, next;
	size_t n;
	bool tty;
	FILE *f;

	if (argc != 2)
		return bad_usage("logs", "ID");
	ret = get_one(argv[1], &sb);
	if (ret)
		return ret;
	cube_sandbox_path(path, sizeof(path), sb.id, "console.log");
	f = fopen(path, "re");
	if (!f)
		return cc_err(errno == ENOENT ? EX_NOTFOUND : EX_FAIL,
			      "sandbox %s has no console log: %s", argv[1],
			      strerror(errno));
	tty = isatty(STDOUT_FILENO);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (!tty) {
			fwrite(buf, 1, n, stdout);
			continue;
		}
		/* a CR ending one read: its LF may start the next */
		next = n == sizeof(buf) ? fgetc(f) : EOF;
		write_escaped((unsigned char *)buf, n, next == '\n');
		if (next != EOF)
			ungetc(next, f);
	}
	fclose(f);
	return EX_OK;
}

/* --- stats --- */

int cmd_stats(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	struct cube_nl_stats st;
	struct json_object *o;
	struct cube_nl *nl;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != OPT_JSON)
			return bad_usage("stats", "[ID]");
		c->json = true;
	}
	if (optind + 1 == argc) {
		struct cube_nl_sandbox sb;
		long page = sysconf(_SC_PAGESIZE);
		char a[16], b[16], m[16];

		ret = get_one(argv[optind], &sb);
		if (ret)
			return ret;
		if (c->json) {
			o = json_object_new_object();
			json_object_object_add(o, "id", json_object_new_int64(sb.id));
			json_object_object_add(o, "vcpus", json_object_new_int64(sb.vcpus));
			json_object_object_add(o, "memory_bytes", json_object_new_int64(sb.memory));
			json_object_object_add(o, "private_bytes",
					       json_object_new_int64(sb.private_pages * page));
			json_object_object_add(o, "shared_bytes",
					       json_object_new_int64(sb.shared_pages * page));
			cc_json_print(o);
			return EX_OK;
		}
		cc_bytes(sb.memory, m, sizeof(m));
		cc_bytes(sb.private_pages * page, a, sizeof(a));
		cc_bytes(sb.shared_pages * page, b, sizeof(b));
		printf("%-8s %5s %7s %8s %8s\n", "ID", "VCPUS", "MEMORY",
		       "PRIVATE", "SHARED");
		printf("%-8llu %5u %7s %8s %8s\n", (unsigned long long)sb.id,
		       sb.vcpus, m, a, b);
		return EX_OK;
	}
	if (optind != argc)
		return bad_usage("stats", "[ID]");
	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	ret = cube_nl_stats(nl, &st);
	cube_nl_close(nl);
	if (ret)
		return cc_errno(ret, "stats");
	o = json_object_new_object();
	json_object_object_add(o, "sandboxes", json_object_new_int64(st.sandboxes));
	json_object_object_add(o, "pooled", json_object_new_int64(st.pooled));
	json_object_object_add(o, "pools", json_object_new_int64(st.pools));
	json_object_object_add(o, "snapshots", json_object_new_int64(st.snapshots));
	json_object_object_add(o, "clones", json_object_new_int64(st.clones));
	json_object_object_add(o, "shared_pages", json_object_new_int64(st.shared_pages));
	json_object_object_add(o, "private_pages", json_object_new_int64(st.private_pages));
	if (c->json) {
		cc_json_print(o);
		return EX_OK;
	}
	json_object_object_foreach(o, key, val)
		printf("%-14s %s\n", key, json_object_get_string(val));
	json_object_put(o);
	return EX_OK;
}
