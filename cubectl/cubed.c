// SPDX-License-Identifier: GPL-2.0
/*
 * cubed: the cube daemon.  Keeps every pool at its target size (refilling
 * on the module's pool-low events and on a periodic check), kills each
 * sandbox at its end time, rebuilds its view from the module's dump when
 * it starts or loses events, and serves the E2B-compatible HTTP API on
 * loopback, with the port proxy for sandboxes' ports when asked
 * (--proxy-port).  Runs in the foreground; see cubed.service.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cube_backend.h"
#include "cube_runtime.h"
#include "e2b_proxy.h"
#include "e2b_server.h"
#include "nl_client.h"

#define TICK_MS		1000

static bool verbose;

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("cubed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* --- pool keeper: one thread starts sandboxes, one at a time --- */

struct keeper {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool wake, quit;
};

static int fill_pools(void)
{
	struct cube_nl_pool *v;
	struct cube_nl *nl;
	size_t n, i;
	int started = 0, ret;

	ret = cube_nl_open(&nl);
	if (ret)
		return ret;
	ret = cube_nl_pool_dump(nl, &v, &n);
	cube_nl_close(nl);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		struct cube_template t;
		struct cube_launch l = { .tmpl = &t, .pool = v[i].name };
		char err[CUBE_ERR_MAX] = "";
		uint64_t id;

		if (v[i].size >= v[i].target)
			continue;
		if (cube_template_load(v[i].template_name, &t, err)) {
			logmsg("pool %s: %s", v[i].name, err);
			continue;
		}
		/* one at a time: the keeper comes back for the rest */
		ret = cube_sandbox_launch(&l, &id, err);
		if (ret) {
			logmsg("pool %s: cannot start a sandbox: %s", v[i].name, err);
			continue;
		}
		if (verbose)
			logmsg("pool %s: sandbox %llu ready", v[i].name,
			       (unsigned long long)id);
		started++;
	}
	free(v);
	return started;
}

static void *keeper_main(void *arg)
{
	struct keeper *k = arg;

	for (;;) {
		pthread_mutex_lock(&k->lock);
		while (!k->wake && !k->quit)
			pthread_cond_wait(&k->cond, &k->lock);
		k->wake = false;
		if (k->quit) {
			pthread_mutex_unlock(&k->lock);
			return NULL;
		}
		pthread_mutex_unlock(&k->lock);
		/* keep going while sandboxes are still needed */
		while (fill_pools() > 0 && !k->quit)
			;
	}
}

static void keeper_kick(struct keeper *k)
{
	pthread_mutex_lock(&k->lock);
	k->wake = true;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
}

/* --- options --- */

struct opts {
	const char *addr;
	unsigned long api_port, envd_port, proxy_port;
	const char *key_file;
	const char *domain;
	unsigned long max_conns, max_per_client, idle_secs;
	bool no_api;
};

static void usage(FILE *f)
{
	fputs("usage: cubed [--listen ADDR] [--api-port N] [--envd-port N]\n"
	      "             [--api-key-file FILE] [--proxy-port N [--domain D]\n"
	      "             [--proxy-max-conns N] [--proxy-max-per-client N]\n"
	      "             [--proxy-idle-timeout S]] [--no-api] [-v]\n"
	      "\n"
	      "  --listen ADDR        IPv4 address of the E2B API (default 127.0.0.1)\n"
	      "  --api-port N         control-plane port, E2B_API_URL (default 3000)\n"
	      "  --envd-port N        envd port, E2B_SANDBOX_URL (default 49983)\n"
	      "  --api-key-file FILE  accepted API keys, one a line\n"
	      "                       (default /etc/cube/api-keys)\n"
	      "  --proxy-port N       serve sandboxes' ports (getHost) on this port\n"
	      "  --domain D           the domain of <port>-<sandboxID>.D\n"
	      "                       (default localhost:<proxy port>)\n"
	      "  --proxy-max-conns N  proxied connections at once (default 1024)\n"
	      "  --proxy-max-per-client N  from one client address (default 64)\n"
	      "  --proxy-idle-timeout S    close a connection idle this long\n"
	      "                       (default 600 s)\n"
	      "  --no-api             pools and timeouts only, no HTTP API\n"
	      "  -v, --verbose        log pool refills and expiries\n"
	      "\n"
	      "Exit status: 0 stopped by SIGTERM/SIGINT; 1 error; 2 usage;\n"
	      "4 cube.ko not loaded.\n", f);
}

static int parse_port(const char *flag, const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (!*s || *end || errno || *out < 1 || *out > 65535) {
		fprintf(stderr, "cubed: invalid value '%s' for %s (1..65535)\n", s, flag);
		return -1;
	}
	return 0;
}

static int parse_count(const char *flag, const char *s, unsigned long max,
		       unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (!*s || *end || errno || *out < 1 || *out > max) {
		fprintf(stderr, "cubed: invalid value '%s' for %s (1..%lu)\n",
			s, flag, max);
		return -1;
	}
	return 0;
}

/* a host name, optionally with ":PORT": what follows "<port>-<id>." */
static bool domain_valid(const char *d)
{
	size_t i, n = strlen(d);

	if (!n || n > 200 || d[0] == '.' || d[0] == '-')
		return false;
	for (i = 0; i < n; i++) {
		char c = d[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		      c == ':'))
			return false;
	}
	return true;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "api-port", required_argument, NULL, 'a' },
		{ "envd-port", required_argument, NULL, 'e' },
		{ "api-key-file", required_argument, NULL, 'k' },
		{ "proxy-port", required_argument, NULL, 'p' },
		{ "domain", required_argument, NULL, 'd' },
		{ "proxy-max-conns", required_argument, NULL, 'C' },
		{ "proxy-max-per-client", required_argument, NULL, 'P' },
		{ "proxy-idle-timeout", required_argument, NULL, 'I' },
		{ "no-api", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'l':
			o->addr = optarg;
			break;
		case 'a':
			if (parse_port("--api-port", optarg, &o->api_port))
				return 2;
			break;
		case 'e':
			if (parse_port("--envd-port", optarg, &o->envd_port))
				return 2;
			break;
		case 'k':
			o->key_file = optarg;
			break;
		case 'p':
			if (parse_port("--proxy-port", optarg, &o->proxy_port))
				return 2;
			break;
		case 'd':
			if (!domain_valid(optarg)) {
				fprintf(stderr, "cubed: invalid domain '%s'\n", optarg);
				return 2;
			}
			o->domain = optarg;
			break;
		case 'C':
			if (parse_count("--proxy-max-conns", optarg, 65536,
					&o->max_conns))
				return 2;
			break;
		case 'P':
			if (parse_count("--proxy-max-per-client", optarg, 65536,
					&o->max_per_client))
				return 2;
			break;
		case 'I':
			if (parse_count("--proxy-idle-timeout", optarg, 86400,
					&o->idle_secs))
				return 2;
			break;
		case 'n':
			o->no_api = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "cubed: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o->api_port == o->envd_port || o->proxy_port == o->api_port ||
	    o->proxy_port == o->envd_port) {
		fprintf(stderr, "cubed: --api-port, --envd-port and --proxy-port must differ\n");
		return 2;
	}
	return 0;
}

/* --- main loop --- */

static void handle_event(struct cube_backend *be, struct keeper *k,
			 struct e2b_proxy *proxy,
			 const struct cube_nl_event *ev)
{
	switch (ev->cmd) {
	case CUBE_CMD_EVENT_POOL_LOW:
		keeper_kick(k);
		break;
	case CUBE_CMD_EVENT_SANDBOX_EXIT:
		if (ev->has_sandbox) {
			/* no socket keeps its namespace alive */
			e2b_proxy_drop(proxy, ev->sandbox.id);
			cube_backend_forget(be, ev->sandbox.id);
		}
		keeper_kick(k);	/* a pooled sandbox may have died */
		break;
	default:
		break;
	}
}

int main(int argc, char **argv)
{
	struct opts o = { .addr = "127.0.0.1", .api_port = 3000,
			  .envd_port = 49983, .key_file = "/etc/cube/api-keys" };
	struct keeper k = { .lock = PTHREAD_MUTEX_INITIALIZER,
			    .cond = PTHREAD_COND_INITIALIZER };
	struct e2b_keys keys = { 0 };
	struct e2b_server *srv = NULL;
	struct e2b_proxy *proxy = NULL;
	char domain[256];
	struct cube_backend *be = NULL;
	struct cube_nl *events = NULL;
	struct e2b_api api;
	pthread_t keeper;
	sigset_t mask;
	int sfd, ret, rc = 1;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);	/* threads inherit the mask */
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		logmsg("signalfd: %s", strerror(errno));
		return 1;
	}

	ret = cube_backend_new(&be);
	if (!ret)
		ret = cube_nl_events_open(&events);
	if (ret == -ENOPKG) {
		logmsg("cube.ko is not loaded (no \"cube\" netlink family)");
		rc = 4;
		goto out;
	}
	if (ret) {
		logmsg("netlink: %s", strerror(-ret));
		goto out;
	}
	cube_nl_set_nonblocking(events);
	ret = cube_backend_sync(be);
	if (ret) {
		logmsg("cannot read the module's sandboxes: %s", strerror(-ret));
		goto out;
	}
	if (!o.no_api) {
		struct e2b_server_config cfg = {
			.addr = o.addr, .api_port = o.api_port,
			.envd_port = o.envd_port, .api = &api,
		};

		ret = e2b_keys_load(&keys, o.key_file);
		if (ret) {
			logmsg("API keys %s: %s", o.key_file,
			       ret == -ENOKEY ? "the file holds no key" :
			       ret == -EINVAL ? "a line is not a valid key" :
			       strerror(-ret));
			goto out;
		}
		api.keys = &keys;
		api.backend = cube_backend_e2b(be);
		api.domain = o.domain;
		/* E2b-Sandbox-Port requests on envd's listener (runCode) */
		api.ports = &cube_backend_proxy_ops;
		api.ports_ctx = be;
		if (o.proxy_port) {
			struct e2b_proxy_config pc = {
				.addr = o.addr, .port = o.proxy_port,
				.ops = &cube_backend_proxy_ops, .ctx = be,
				.max_conns = o.max_conns,
				.max_per_client = o.max_per_client,
				.idle_secs = o.idle_secs,
			};

			ret = e2b_proxy_start(&pc, &proxy);
			if (ret) {
				logmsg("cannot serve the port proxy on %s:%lu: %s",
				       o.addr, o.proxy_port, strerror(-ret));
				goto out;
			}
			if (!o.domain) {
				snprintf(domain, sizeof(domain), "localhost:%u",
					 e2b_proxy_port(proxy));
				api.domain = domain;
			}
		}
		ret = e2b_server_start(&cfg, &srv);
		if (ret) {
			logmsg("cannot serve on %s:%lu/%lu: %s", o.addr,
			       o.api_port, o.envd_port, strerror(-ret));
			goto out;
		}
		logmsg("E2B API on http://%s:%u, envd on http://%s:%u", o.addr,
		       e2b_server_port(srv, E2B_PLANE_API), o.addr,
		       e2b_server_port(srv, E2B_PLANE_ENVD));
		if (proxy)
			logmsg("ports on http://<port>-<sandboxID>.%s (proxy on %s:%u)",
			       api.domain, o.addr, e2b_proxy_port(proxy));
	}
	ret = pthread_create(&keeper, NULL, keeper_main, &k);
	if (ret) {
		logmsg("cannot start the pool keeper: %s", strerror(ret));
		goto out;
	}
	keeper_kick(&k);
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = cube_nl_fd(events), .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
		};
		struct cube_nl_event ev;
		static time_t last_tick;
		time_t now;

		if (poll(p, 2, TICK_MS) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN) {
			rc = 0;
			break;
		}
		while ((ret = cube_nl_event_next(events, &ev)) == 0)
			handle_event(be, &k, proxy, &ev);
		if (ret == -ENOBUFS) {
			logmsg("events were lost; resynchronising");
			cube_backend_sync(be);
			keeper_kick(&k);
		}
		now = time(NULL);
		if (now != last_tick) {
			int n = cube_backend_expire(be, now);

			if (n && verbose)
				logmsg("%d sandbox(es) reached their end time", n);
			/* pools drained by hand or by crashes */
			if (now % 10 == 0)
				keeper_kick(&k);
			last_tick = now;
		}
	}
	pthread_mutex_lock(&k.lock);
	k.quit = true;
	pthread_cond_signal(&k.cond);
	pthread_mutex_unlock(&k.lock);
	pthread_join(keeper, NULL);
out:
	e2b_server_stop(srv);
	e2b_proxy_stop(proxy);
	cube_nl_close(events);
	cube_backend_free(be);
	e2b_keys_free(&keys);
	close(sfd);
	return rc;
}
