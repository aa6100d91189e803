/*
 * metrics.c — the Prometheus text format's HELP and TYPE lines and label
 * values (metrics.h).
 */
#include "config.h"

#include <string.h>

#include <event2/buffer.h>

#include "metrics.h"

void
metrics_head(struct evbuffer *out, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

void
metrics_label(struct evbuffer *out, const char *v)
{
	size_t n;

	evbuffer_add(out, "\"", 1);
	for (;;) {
		n = strcspn(v, "\\\"\n");
		evbuffer_add(out, v, n);
		if (v[n] == '\0')
			break;
		evbuffer_add(out, v[n] == '\n' ? "\\n" : v[n] == '"' ?
		    "\\\"" : "\\\\", 2);
		v += n + 1;
	}
	evbuffer_add(out, "\"", 1);
}
