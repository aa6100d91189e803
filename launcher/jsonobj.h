/*
 * jsonobj.h — reading a small JSON file of one flat object strictly, with
 * the one YAML/JSON event reader in JSON mode (common/yread.h): the
 * launcher's reader of the proxy's state file (state.c) and of enforce's
 * record (enforce-record.c).
 *
 * A file is read whole (at most schema->max_bytes), parsed, and its keys
 * matched against the schema's names: one object, no key twice, every
 * required key there, nothing after the object; keys the schema does not
 * name are ignored (written by a newer version).  Each known key's value
 * goes to schema->value(), which checks its type with the helpers below.
 * Every error is one line naming the file, the line and the column:
 * "state file 'P' is malformed: line 1 column 9: 'port' is not a number".
 */
#ifndef INTUTIC_JSONOBJ_H
#define INTUTIC_JSONOBJ_H

#include <stddef.h>

#include "yread.h"

#define JSONOBJ_OK		0
#define JSONOBJ_MISSING		1	/* the file does not exist */
#define JSONOBJ_INVALID		2	/* unreadable, untrusted or malformed */

#define JSONOBJ_KEYS_MAX	32

/* The file must belong to root and be writable by nobody else. */
#define JSONOBJ_ROOT_OWNED	0x1

/* A read under way: the event reader, on the current value. */
struct jsonobj_ctx {
	struct yread	*p;
};

struct jsonobj_schema {
	const char		*what;		/* "state file" */
	const char *const	*keys;		/* names, by index */
	int			 nkeys;		/* at most JSONOBJ_KEYS_MAX */
	unsigned int		 required;	/* bit i: keys[i] must be there */
	size_t			 max_bytes;
	int			 flags;		/* JSONOBJ_ROOT_OWNED */
	/*
	 * Stores keys[key]'s value (the current event: its first) in out,
	 * with the helpers below: 0, or -1 after jsonobj_error().
	 */
	int	(*value)(struct jsonobj_ctx *, int key, void *out);
};

/*
 * Reads path into out (which schema->value() fills; the caller clears it
 * first and discards it unless JSONOBJ_OK).  Returns JSONOBJ_OK,
 * JSONOBJ_MISSING, or JSONOBJ_INVALID with one line in err.
 */
int	 jsonobj_read(const struct jsonobj_schema *schema, const char *path,
	    void *out, char *err, size_t errlen);

/* "WHAT 'P' is malformed: line L column C: MESSAGE" at the value; -1. */
int	 jsonobj_error(struct jsonobj_ctx *ctx, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* A JSON number from min to max (digits, no sign, no leading zero). */
int	 jsonobj_number(struct jsonobj_ctx *ctx, const char *key,
	    long long min, long long max, long long *out);

/* A JSON string, not empty, without NUL, that fits in buf with its NUL. */
int	 jsonobj_string(struct jsonobj_ctx *ctx, const char *key, char *buf,
	    size_t len);

/* 1 when the value is JSON's null, else 0. */
int	 jsonobj_is_null(struct jsonobj_ctx *ctx);

/*
 * A JSON array of strings, each into strs[i] (of width bytes), at most max
 * of them: their count in *count.  Empty arrays are allowed.
 */
int	 jsonobj_strings(struct jsonobj_ctx *ctx, const char *key, char *strs,
	    size_t width, size_t max, size_t *count);

#endif /* INTUTIC_JSONOBJ_H */
