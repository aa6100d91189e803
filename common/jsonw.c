/*
 * jsonw.c — the one JSON string writer (see jsonw.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

size_t
jsonw_escape(unsigned char c, char out[JSONW_ESC_MAX])
{
	static const char hex[] = "0123456789abcdef";

	if (c == '"' || c == '\\') {
		out[0] = '\\';
		out[1] = (char)c;
		return 2;
	}
	if (c < 0x20 || c == 0x7f) {
		memcpy(out, "\\u00", 4);
		out[4] = hex[c >> 4];
		out[5] = hex[c & 15];
		return 6;
	}
	out[0] = (char)c;
	return 1;
}

int
jsonw_str(char *buf, size_t len, size_t *used, const char *s)
{
	char e[JSONW_ESC_MAX];
	size_t n = *used, k;

	if (s == NULL) {
		if (n + 5 > len)
			return -1;
		memcpy(buf + n, "null", 5);
		*used = n + 4;
		return 0;
	}
	if (n + 1 >= len)
		return -1;
	buf[n++] = '"';
	for (; *s != '\0'; s++) {
		k = jsonw_escape((unsigned char)*s, e);
		if (n + k + 2 > len)
			goto full;
		memcpy(buf + n, e, k);
		n += k;
	}
	if (n + 2 > len)
		goto full;
	buf[n++] = '"';
	buf[n] = '\0';
	*used = n;
	return 0;
 full:
	if (*used < len)
		buf[*used] = '\0';
	return -1;
}

int
jsonw_raw(char *buf, size_t len, size_t *used, const char *s)
{
	size_t n = strlen(s);

	if (*used + n >= len)
		return -1;
	memcpy(buf + *used, s, n + 1);
	*used += n;
	return 0;
}

void
jsonw_fstr(FILE *fp, const char *s)
{
	char e[JSONW_ESC_MAX];
	size_t k;

	if (s == NULL) {
		fputs("null", fp);
		return;
	}
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		k = jsonw_escape((unsigned char)*s, e);
		fwrite(e, 1, k, fp);
	}
	fputc('"', fp);
}

char *
jsonw_quote(const char *s, size_t *len)
{
	size_t cap = (s != NULL ? strlen(s) : 0) * JSONW_ESC_MAX + 5;
	char *buf;

	*len = 0;
	if ((buf = malloc(cap)) == NULL)
		return NULL;
	buf[0] = '\0';
	if (jsonw_str(buf, cap, len, s) != 0) {	/* cannot be: it fits */
		free(buf);
		return NULL;
	}
	return buf;
}
