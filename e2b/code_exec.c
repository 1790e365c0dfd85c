// SPDX-License-Identifier: GPL-2.0
/*
 * code_exec.c: parsing the lines of a code interpreter's answer
 * (code_exec.h).
 */
#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include "code_exec.h"

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int code_event_parse(const char *line, size_t len, struct code_event *ev)
{
	struct json_tokener *tok;
	struct json_object *o, *v;
	const char *type;

	memset(ev, 0, sizeof(*ev));
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, line, len);
	if (o && json_tokener_get_parse_end(tok) != len) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	if (!o)
		return -EINVAL;
	ev->obj = o;
	type = json_object_is_type(o, json_type_object) ? str(o, "type") : NULL;
	if (!type)
		goto bad;
	if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		ev->type = type[3] == 'o' ? CODE_STDOUT : CODE_STDERR;
		ev->text = str(o, "text");
		if (!ev->text)
			goto bad;
	} else if (!strcmp(type, "result")) {
		ev->type = CODE_RESULT;
		ev->text = str(o, "text");
		ev->is_main = json_object_object_get_ex(o, "is_main_result", &v) &&
			      json_object_get_boolean(v);
	} else if (!strcmp(type, "error")) {
		ev->type = CODE_ERROR;
		ev->name = str(o, "name");
		ev->value = str(o, "value");
		ev->traceback = str(o, "traceback");
		if (!ev->name)
			goto bad;
	} else if (!strcmp(type, "number_of_executions")) {
		ev->type = CODE_COUNT;
		if (!json_object_object_get_ex(o, "execution_count", &v) ||
		    !json_object_is_type(v, json_type_int))
			goto bad;
		ev->count = json_object_get_int64(v);
	} else {
		ev->type = CODE_OTHER;
	}
	return 0;
bad:
	code_event_free(ev);
	return -EINVAL;
}

const char *code_event_image(const struct code_event *ev, const char **ext)
{
	static const char *const kinds[] = { "png", "jpeg", "svg" };
	size_t i;

	if (ev->type != CODE_RESULT)
		return NULL;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const char *d = str(ev->obj, kinds[i]);

		if (d) {
			*ext = kinds[i];
			return d;
		}
	}
	return NULL;
}

void code_event_free(struct code_event *ev)
{
	json_object_put(ev->obj);
	memset(ev, 0, sizeof(*ev));
}
