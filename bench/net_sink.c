// SPDX-License-Identifier: GPL-2.0
/*
 * net_sink ADDR: the far end of net_bench.sh, run in the "internet"
 * namespace it builds.  TCP ADDR:5001 reads each connection to its end and
 * answers one byte ("k"), so the sender knows when everything arrived;
 * UDP ADDR:5002 echoes every datagram.  Runs until killed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TCP_PORT	5001
#define UDP_PORT	5002

static int bound(const char *addr, int type, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	int fd = socket(AF_INET, type, 0), one = 1;

	if (fd < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (type == SOCK_STREAM && listen(fd, 16))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void *sink(void *arg)
{
	int c = (int)(long)arg;
	char buf[65536];

	while (read(c, buf, sizeof(buf)) > 0)
		;
	if (write(c, "k", 1) != 1)
		perror("net_sink: write");
	close(c);
	return NULL;
}

static void *echo(void *arg)
{
	int fd = (int)(long)arg;
	struct sockaddr_in from;
	socklen_t len;
	char buf[2048];
	ssize_t n;

	for (;;) {
		len = sizeof(from);
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from,
			     &len);
		if (n >= 0)
			sendto(fd, buf, n, 0, (struct sockaddr *)&from, len);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int tcp, udp;

	if (argc != 2) {
		fprintf(stderr, "usage: net_sink ADDR\n");
		return 2;
	}
	tcp = bound(argv[1], SOCK_STREAM, TCP_PORT);
	udp = bound(argv[1], SOCK_DGRAM, UDP_PORT);
	if (tcp < 0 || udp < 0) {
		perror("net_sink: bind");
		return 1;
	}
	if (pthread_create(&t, NULL, echo, (void *)(long)udp))
		return 1;
	for (;;) {
		int c = accept(tcp, NULL, NULL);

		if (c < 0)
			continue;
		if (pthread_create(&t, NULL, sink, (void *)(long)c))
			close(c);
		else
			pthread_detach(t);
	}
}
