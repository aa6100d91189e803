/*
 * metrics.h — the pieces of the Prometheus text format (version 0.0.4)
 * the proxy's /metrics page is written with (main.c, gateway.c).
 *
 * The page's conventions, checked by t4007 with promtool and the Python
 * client's parser: every name starts intutic_, is in base units (seconds,
 * bytes) and, for a counter, ends in _total; every family has its HELP and
 * TYPE lines before its samples; label values are escaped here.
 */
#ifndef INTUTIC_METRICS_H
#define INTUTIC_METRICS_H

struct evbuffer;

/*
 * Appends a family's "# HELP NAME HELP" and "# TYPE NAME TYPE" lines.
 * help must hold no backslash and no newline (the format would want them
 * escaped): it is a constant of the caller's.
 */
void	 metrics_head(struct evbuffer *out, const char *name,
	    const char *type, const char *help);

/*
 * Appends v as a label value: between double quotes, with '\', '"' and a
 * newline escaped as \\, \" and \n; other bytes as they are.
 */
void	 metrics_label(struct evbuffer *out, const char *v);

#endif /* INTUTIC_METRICS_H */
