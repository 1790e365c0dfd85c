/* SPDX-License-Identifier: GPL-2.0 */
/*
 * code_exec.h: the lines of a code interpreter's POST /execute answer
 * (guest/code-interpreter, port 49999), as cubectl run reads them.
 *
 * Each line is one JSON object whose "type" is stdout, stderr, result,
 * error or number_of_executions; a result carries a MIME bundle under
 * short keys (text, html, png, jpeg, svg, ...) and is_main_result.
 */
#ifndef CUBE_CODE_EXEC_H
#define CUBE_CODE_EXEC_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

enum code_event_type {
	CODE_STDOUT,
	CODE_STDERR,
	CODE_RESULT,
	CODE_ERROR,
	CODE_COUNT,
	CODE_OTHER,	/* a type this client does not know: skipped */
};

/**
 * struct code_event - one parsed line; the strings point into @obj
 * @text: stdout/stderr text; a result's "text" (NULL when it has none)
 * @name, @value, @traceback: an error's
 * @is_main: a result is the value of the code's last expression
 * @count: number_of_executions' execution_count
 * @obj: the line's object (json_object_put() it, or code_event_free())
 */
struct code_event {
	enum code_event_type type;
	const char *text;
	const char *name, *value, *traceback;
	bool is_main;
	long count;
	struct json_object *obj;
};

/**
 * code_event_parse() - one line (without its newline)
 *
 * Return: 0; -EINVAL when it is not a JSON object with a string "type",
 * or a known type lacks its fields (stdout without text, error without
 * name).
 */
int code_event_parse(const char *line, size_t len, struct code_event *ev);

/**
 * code_event_image() - an image of a result: its base64 data
 * @ext: set to the file extension ("png", "jpeg", "svg")
 *
 * Return: the data, NULL when the result has no image.
 */
const char *code_event_image(const struct code_event *ev, const char **ext);

void code_event_free(struct code_event *ev);

#endif /* CUBE_CODE_EXEC_H */
