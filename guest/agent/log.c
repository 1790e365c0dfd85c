// SPDX-License-Identifier: GPL-2.0
/*
 * log.c: the agent's diagnostics, on stderr (the console as PID 1).
 */
#include <stdarg.h>
#include <stdio.h>

#include "agent.h"

void agent_log(const char *fmt, ...)
{
	va_list ap;

	fputs("cube-agent: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
