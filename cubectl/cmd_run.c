// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_run.c: cubectl run ID [--language L] CODE|-
 *
 * Runs code in the sandbox's code interpreter (templates built from the
 * code-interpreter rootfs: guest/code-interpreter, port 49999), reached as
 * cubed reaches it: a TCP connection made in the sandbox's network
 * namespace.  Prints stdout and stderr as they come, each result's text,
 * saves each image result to ./cube-<id>-<n>.<ext> and prints its path,
 * and prints an error's traceback on stderr (exit status 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/cube.h>

#include "code_exec.h"
#include "cube_runtime.h"
#include "cubectl.h"
#include "e2b_forward.h"
#include "e2b_proxy.h"

#define CODE_PORT	49999
#define CODE_MAX	(1024 * 1024)

static char *read_code(const char *arg)
{
	size_t len = 0, cap = 4096;
	char *buf;
	ssize_t n;

	if (strcmp(arg, "-"))
		return strdup(arg);
	buf = malloc(cap);
	while (buf && (n = read(0, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (len + 1 == cap) {
			char *nb = cap < CODE_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

static int write_all(int fd, const char *p, size_t len)
{
	struct pollfd pf = { .fd = fd, .events = POLLOUT };

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EAGAIN) {
			poll(&pf, 1, -1);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* decode base64 @in into file @path */
static int save_base64(const char *in, const char *path)
{
	static const char al[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned int acc = 0, bits = 0;
	FILE *f = fopen(path, "wx");
	const char *p;

	if (!f)
		return -errno;
	for (p = in; *p && *p != '='; p++) {
		const char *q = strchr(al, *p);

		if (!q || !*p)
			continue;	/* newlines */
		acc = acc << 6 | (unsigned int)(q - al);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			fputc((acc >> bits) & 0xff, f);
		}
	}
	return fclose(f) ? -errno : 0;
}

struct run {
	uint64_t id;
	int images;
	bool failed;
};

static void show(struct run *r, const struct code_event *ev)
{
	const char *data, *ext;
	char path[64];

	switch (ev->type) {
	case CODE_STDOUT:
		fputs(ev->text, stdout);
		fflush(stdout);
		break;
	case CODE_STDERR:
		fputs(ev->text, stderr);
		break;
	case CODE_RESULT:
		data = code_event_image(ev, &ext);
		if (data) {
			snprintf(path, sizeof(path), "cube-%llu-%d.%s",
				 (unsigned long long)r->id, ++r->images, ext);
			if (!strcmp(ext, "svg")) {
				FILE *f = fopen(path, "wx");

				if (f) {
					fputs(data, f);
					fclose(f);
				}
			} else if (save_base64(data, path)) {
				cc_err(EX_FAIL, "cannot write %s: %s", path, strerror(errno));
				r->failed = true;
				break;
			}
			printf("image: %s\n", path);
		} else if (ev->text) {
			printf("%s\n", ev->text);
		}
		fflush(stdout);
		break;
	case CODE_ERROR:
		if (ev->traceback && *ev->traceback)
			fprintf(stderr, "%s\n", ev->traceback);
		else
			fprintf(stderr, "%s: %s\n", ev->name, ev->value ? ev->value : "");
		r->failed = true;
		break;
	default:
		break;
	}
}

static int run_code(int fd, struct run *r, const char *body, size_t blen)
{
	struct e2b_forward_hdr h[] = { { "Content-Type", "application/json" } };
	struct e2b_forward_reply reply;
	size_t hlen, len = 0, cap = 64 * 1024, off;
	char *head, *buf;
	int ret, hl = -EAGAIN;

	head = e2b_forward_head("POST", "/execute", NULL, h, 1, blen, &hlen);
	if (!head)
		return -errno;
	ret = write_all(fd, head, hlen);
	free(head);
	if (!ret)
		ret = write_all(fd, body, blen);
	if (ret)
		return ret;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	off = 0;
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;
		char *nl;

		if (len + 1 >= cap) {
			char *nb = cap < 64 * CODE_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				ret = -E2BIG;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			poll(&pf, 1, -1);
			continue;
		}
		if (n < 0) {
			ret = -errno;
			break;
		}
		len += n;
		if (hl == -EAGAIN) {
			hl = e2b_forward_parse_reply(buf, len, &reply);
			if (hl == -EAGAIN && n)
				continue;
			if (hl < 0) {
				ret = -EPROTO;
				break;
			}
			off = hl;
			if (reply.status != 200) {
				buf[len] = '\0';
				cc_err(EX_FAIL, "the code interpreter answered %u: %s",
				       reply.status, buf + off);
				r->failed = true;
				ret = 0;
				break;
			}
		}
		while ((nl = memchr(buf + off, '\n', len - off))) {
			struct code_event ev;

			if (!code_event_parse(buf + off, nl - (buf + off), &ev)) {
				show(r, &ev);
				code_event_free(&ev);
			}
			off = nl + 1 - buf;
		}
		memmove(buf, buf + off, len - off);
		len -= off;
		off = 0;
		if (!n) {
			ret = 0;
			break;
		}
	}
	free(buf);
	return ret;
}

int cmd_run(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "language", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *language = NULL;
	struct json_object *req;
	struct run r = { 0 };
	const char *body;
	char *code;
	size_t blen;
	int opt, ns, fd, ret;

	while ((opt = getopt_long(argc, argv, "+l:", opts, NULL)) != -1) {
		if (opt != 'l')
			return cc_err(EX_USAGE, "usage: %s run ID [--language L] CODE|-", cc_prog);
		language = optarg;
	}
	/* the option may also follow the id: run ID --language L CODE */
	if (argc - optind == 4 && (!strcmp(argv[optind + 1], "--language") ||
				   !strcmp(argv[optind + 1], "-l"))) {
		language = argv[optind + 2];
		argv[optind + 2] = argv[optind];
		optind += 2;
	}
	/* run ID --language: the option without its value is no code */
	if (argc - optind == 2 &&
	    (!strcmp(argv[optind + 1], "--language") ||
	     !strcmp(argv[optind + 1], "-l") ||
	     !strncmp(argv[optind + 1], "--language=", 11)))
		return cc_err(EX_USAGE, "usage: %s run ID [--language L] CODE|- (--language needs a value and code follows it)",
			      cc_prog);
	if (argc - optind != 2)
		return cc_err(EX_USAGE, "usage: %s run ID [--language L] CODE|-", cc_prog);
	if (cc_parse_id(argv[optind], &r.id))
		return EX_USAGE;
	code = read_code(argv[optind + 1]);
	if (!code)
		return cc_err(EX_FAIL, "cannot read the code");
	req = json_object_new_object();
	json_object_object_add(req, "code", json_object_new_string(code));
	free(code);
	if (language)
		json_object_object_add(req, "language", json_object_new_string(language));
	body = json_object_to_json_string_length(req, JSON_C_TO_STRING_PLAIN, &blen);
	ns = cube_sandbox_netns(r.id);
	if (ns < 0) {
		json_object_put(req);
		return ns == -ENOENT || ns == -ESRCH ?
		       cc_errno(ns, argv[optind]) :
		       cc_err(cc_code(ns), "sandbox %s has no network to reach its code interpreter: %s",
			      argv[optind], strerror(-ns));
	}
	fd = e2b_proxy_dial(ns, CODE_PORT);
	close(ns);
	if (fd < 0) {
		json_object_put(req);
		return cc_err(EX_FAIL, "no code interpreter answers on port %d of sandbox %s (%s): was its template built from the code-interpreter rootfs?",
			      CODE_PORT, argv[optind], strerror(-fd));
	}
	ret = run_code(fd, &r, body, blen);
	close(fd);
	json_object_put(req);
	if (ret)
		return cc_err(EX_FAIL, "sandbox %s: %s", argv[optind], strerror(-ret));
	(void)c;
	return r.failed ? EX_FAIL : EX_OK;
}
