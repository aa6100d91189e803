/*
 * test-metrics.c — proxy/metrics.c: a label value with the three bytes the
 * Prometheus text format escapes, and plain ones; a family's HELP and TYPE
 * lines.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "metrics.h"
#include "tap.h"

/* What out holds, as a string (out is emptied). */
static const char *
text(struct evbuffer *out)
{
	static char buf[256];
	size_t n = evbuffer_get_length(out);

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	evbuffer_remove(out, buf, n);
	buf[n] = '\0';
	evbuffer_drain(out, evbuffer_get_length(out));
	return buf;
}

int
main(void)
{
	static const struct {
		const char	*in;
		const char	*out;
	} cases[] = {
		{ "anthropic", "\"anthropic\"" },
		{ "", "\"\"" },
		{ "a\"b", "\"a\\\"b\"" },
		{ "a\\b", "\"a\\\\b\"" },
		{ "a\nb", "\"a\\nb\"" },
		{ "\"\\\n", "\"\\\"\\\\\\n\"" },
		{ "tab\tcaf\xc3\xa9", "\"tab\tcaf\xc3\xa9\"" },
	};
	struct evbuffer *out;
	size_t i;

	if ((out = evbuffer_new()) == NULL) {
		tap_diag("evbuffer_new: out of memory");
		return 1;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		metrics_label(out, cases[i].in);
		tap_is_str(text(out), cases[i].out, "metrics_label: %s",
		    cases[i].out);
	}
	metrics_head(out, "intutic_x_total", "counter", "Xs.");
	tap_is_str(text(out), "# HELP intutic_x_total Xs.\n"
	    "# TYPE intutic_x_total counter\n", "metrics_head");
	evbuffer_free(out);
	return tap_done();
}
