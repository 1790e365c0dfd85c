// SPDX-License-Identifier: GPL-2.0
/*
 * net-echo: runs in the L2 guest of the vmm network tests.
 *
 *   net-echo UDP_PORT BEACON_ADDR BEACON_PORT [TCP_PORT]
 *
 * Echoes every UDP datagram on UDP_PORT back to its sender, sends a
 * "beacon N" datagram to BEACON_ADDR:BEACON_PORT every second (traffic the
 * guest starts itself), and, with TCP_PORT, accepts TCP connections there
 * and reads them to the end, answering with the byte count as a decimal
 * line (a bulk transfer from the host).  Prints CUBE-L2-NET-READY once it
 * listens.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int bound(int type, unsigned int port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int one = 1, fd = socket(AF_INET, type, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (type == SOCK_STREAM && listen(fd, 4))) {
		close(fd);
		return -1;
	}
	return fd;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Read a TCP stream to its end, answer with its length. */
static void sink(int lfd)
{
	static char buf[65536];
	unsigned long long total = 0;
	char line[32];
	ssize_t n;
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	n = snprintf(line, sizeof(line), "%llu\n", total);
	if (write(fd, line, n) != n)
		perror("net-echo: tcp answer");
	close(fd);
}

int main(int argc, char **argv)
{
	struct sockaddr_in beacon = { .sin_family = AF_INET };
	struct pollfd p[2];
	unsigned long n = 0;
	double next = 0;
	int udp, tcp = -1, np = 1;
	static char buf[65536];

	if (argc < 4 || inet_pton(AF_INET, argv[2], &beacon.sin_addr) != 1) {
		fprintf(stderr, "usage: net-echo UDP_PORT BEACON_ADDR BEACON_PORT [TCP_PORT]\n");
		return 2;
	}
	beacon.sin_port = htons(atoi(argv[3]));
	udp = bound(SOCK_DGRAM, atoi(argv[1]));
	if (argc > 4)
		tcp = bound(SOCK_STREAM, atoi(argv[4]));
	if (udp < 0 || (argc > 4 && tcp < 0)) {
		perror("net-echo: bind");
		return 1;
	}
	printf("CUBE-L2-NET-READY\n");
	fflush(stdout);
	p[0].fd = udp;
	p[0].events = POLLIN;
	if (tcp >= 0) {
		p[1].fd = tcp;
		p[1].events = POLLIN;
		np = 2;
	}
	for (;;) {
		int wait = (int)((next - now()) * 1000);

		if (wait <= 0) {
			int len = snprintf(buf, sizeof(buf), "beacon %lu", n++);

			/* A gateway still being set up refuses it: no matter. */
			sendto(udp, buf, len, 0, (struct sockaddr *)&beacon,
			       sizeof(beacon));
			next = now() + 1;
			wait = 1000;
		}
		if (poll(p, np, wait) < 0 && errno != EINTR)
			return 1;
		if (p[0].revents & POLLIN) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t r = recvfrom(udp, buf, sizeof(buf), 0,
					     (struct sockaddr *)&from, &fl);

			if (r >= 0)
				sendto(udp, buf, r, 0, (struct sockaddr *)&from, fl);
		}
		if (np > 1 && (p[1].revents & POLLIN))
			sink(tcp);
	}
}
