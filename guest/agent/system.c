// SPDX-License-Identifier: GPL-2.0
/*
 * system.c: health, RNG reseeding and identity (hostname, sandbox id,
 * wall clock), as the host sets them after a restore.  Changing the
 * hostname, the clock or the RNG needs allow_system (always on as PID 1,
 * --allow-system natively); the sandbox id lives in the state directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define SANDBOX_ID_FILE "sandbox-id"

static int read_sandbox_id(const struct agent_config *cfg, char *id, size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	id[0] = 0;
	if (!cfg->state)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/" SANDBOX_ID_FILE, cfg->state);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, id, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	id[n] = 0;
	return 0;
}

static int write_sandbox_id(const struct agent_config *cfg, const char *id)
{
	char path[4096], tmp[4096];
	size_t len = strlen(id);
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/" SANDBOX_ID_FILE, cfg->state);
	snprintf(tmp, sizeof(tmp), "%s/." SANDBOX_ID_FILE ".%d", cfg->state, getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, id, len) != (ssize_t)len)
		err = -EIO;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int system_pong(struct session *s, uint32_t id)
{
	struct cube_wire_buf b = { 0 };
	char sid[CUBE_AGENT_MAX_ID], host[65];

	cube_wire_start(&b, CUBE_MSG_PONG, id);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, CUBE_AGENT_PROTO_VERSION);
	cube_wire_put_u32(&b, CUBE_ATTR_READY, s->cfg->ready);
	if (!read_sandbox_id(s->cfg, sid, sizeof(sid)) && sid[0])
		cube_wire_put_str(&b, CUBE_ATTR_SANDBOX_ID, sid);
	if (!gethostname(host, sizeof(host)) && host[0]) {
		host[sizeof(host) - 1] = 0;
		cube_wire_put_str(&b, CUBE_ATTR_HOSTNAME, host);
	}
	return session_send(s, &b);
}

static int reseed(struct session *s, const struct cube_wire_msg *m)
{
	const struct cube_agent_attr *a = m->first[CUBE_ATTR_SEED];
	uint16_t len = cube_wire_len(a);
	struct rand_pool_info *info;
	int fd, err = 0;

	if (len < CUBE_AGENT_MIN_SEED)
		return session_send_error(s, m->id, EINVAL,
					  "seed of %u bytes, at least %u needed",
					  len, CUBE_AGENT_MIN_SEED);
	if (!s->cfg->allow_system)
		return session_send_error(s, m->id, EPERM,
					  "reseeding is disabled (not the guest's init)");
	info = calloc(1, sizeof(*info) + CUBE_AGENT_MAX_SEED);
	if (!info)
		return session_send_error(s, m->id, ENOMEM, "out of memory");
	info->entropy_count = len * 8;
	info->buf_size = len;
	memcpy(info->buf, cube_wire_value(a), len);
	/*
	 * Mixing the seed in is not enough: once the kernel's CRNG is ready it
	 * reseeds from the pool only every minute, so every clone restored
	 * from one snapshot would keep producing the same stream until then.
	 * RNDRESEEDCRNG makes it reseed now, from the pool holding our seed
	 * (ENODATA: not ready yet, so the credited seed readies it anyway).
	 */
	fd = open("/dev/random", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, RNDADDENTROPY, info) < 0)
		err = errno;
	else if (ioctl(fd, RNDRESEEDCRNG) < 0 && errno != ENODATA)
		err = errno;
	if (fd >= 0)
		close(fd);
	explicit_bzero(info->buf, len);
	free(info);
	if (err)
		return session_send_error(s, m->id, err, "reseeding: %s",
					  strerror(err));
	return session_send_ok(s, m->id);
}

static bool valid_hostname(const char *h)
{
	size_t i;

	for (i = 0; h[i]; i++) {
		char c = h[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
	}
	return i && i <= 64 && h[0] != '-' && h[0] != '.';
}

static bool valid_sandbox_id(const char *id)
{
	size_t i;

	for (i = 0; id[i]; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			return false;
	}
	return i > 0;
}

static int identity(struct session *s, const struct cube_wire_msg *m)
{
	const struct cube_agent_attr *host = m->first[CUBE_ATTR_HOSTNAME];
	const struct cube_agent_attr *sid = m->first[CUBE_ATTR_SANDBOX_ID];
	const struct cube_agent_attr *t = m->first[CUBE_ATTR_TIME_NS];
	struct timespec ts;
	int err;

	/* check everything first: a refused request changes nothing */
	if (!host && !sid && !t)
		return session_send_error(s, m->id, EINVAL,
					  "identity request sets nothing");
	if (host && !valid_hostname(cube_wire_value(host)))
		return session_send_error(s, m->id, EINVAL,
					  "hostname must be 1-64 of [A-Za-z0-9.-]");
	if (sid && !valid_sandbox_id(cube_wire_value(sid)))
		return session_send_error(s, m->id, EINVAL,
					  "sandbox id must be of [A-Za-z0-9._-]");
	if (t && cube_wire_u64(t) > (uint64_t)INT64_MAX)
		return session_send_error(s, m->id, EINVAL, "time out of range");
	if ((host || t) && !s->cfg->allow_system)
		return session_send_error(s, m->id, EPERM,
					  "hostname and clock changes are disabled (not the guest's init)");
	if (sid && !s->cfg->state)
		return session_send_error(s, m->id, EOPNOTSUPP,
					  "no state directory for the sandbox id");
	if (t) {
		ts.tv_sec = cube_wire_u64(t) / 1000000000ULL;
		ts.tv_nsec = cube_wire_u64(t) % 1000000000ULL;
		if (clock_settime(CLOCK_REALTIME, &ts) < 0)
			return session_send_error(s, m->id, errno,
						  "clock_settime: %s", strerror(errno));
	}
	if (host) {
		const char *h = cube_wire_value(host);

		if (sethostname(h, strlen(h)) < 0)
			return session_send_error(s, m->id, errno,
						  "sethostname: %s", strerror(errno));
	}
	if (sid) {
		err = write_sandbox_id(s->cfg, cube_wire_value(sid));
		if (err)
			return session_send_error(s, m->id, -err,
						  "saving the sandbox id: %s",
						  strerror(-err));
	}
	return session_send_ok(s, m->id);
}

int system_request(struct session *s, const struct cube_wire_msg *m)
{
	if (m->type == CUBE_MSG_RESEED)
		return reseed(s, m);
	return identity(s, m);
}
