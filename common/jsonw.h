/*
 * jsonw.h — the one JSON string writer: the audit log, the state file,
 * enforce's record, a run's registration and a microVM's configuration
 * quote their strings with it.  A string is written between double quotes
 * with '"' and '\' escaped and every control byte (and DEL) as \u00XX;
 * other bytes pass as they are (UTF-8 stays UTF-8).  NULL is written null.
 */
#ifndef INTUTIC_JSONW_H
#define INTUTIC_JSONW_H

#include <stddef.h>
#include <stdio.h>

#define JSONW_ESC_MAX	6	/* bytes one byte becomes at most: \u001f */

/* Byte c as it stands inside a JSON string, into out: its length. */
size_t	 jsonw_escape(unsigned char c, char out[JSONW_ESC_MAX]);

/*
 * Appends s, quoted (or null), to buf[0..*used), never past len bytes with
 * the NUL: 0 with *used moved on, or -1 when it does not fit (then buf and
 * *used are as they were).
 */
int	 jsonw_str(char *buf, size_t len, size_t *used, const char *s);

/*
 * Appends s as it is (JSON already: punctuation, a number) to
 * buf[0..*used), as jsonw_str() does: 0, or -1 when it does not fit.
 */
int	 jsonw_raw(char *buf, size_t len, size_t *used, const char *s);

/* Writes s, quoted (or null), to fp. */
void	 jsonw_fstr(FILE *fp, const char *s);

/*
 * s quoted (or null), in a new string of *len bytes (and a NUL); NULL when
 * out of memory.
 */
char	*jsonw_quote(const char *s, size_t *len);

#endif /* INTUTIC_JSONW_H */
