/*
 * yread.h — the one reader of YAML and JSON input: libyaml's event parser
 * with the checks every format of intutic wants.  Each event is checked as
 * it arrives: anchors, aliases and tags are refused, nesting is bounded
 * (YREAD_NESTING_MAX), and in JSON mode (a JSON text is a YAML flow
 * collection) only double-quoted strings and JSON's literals pass, with no
 * block collections and no document markers.  So nothing a file or a server
 * sends can make the parser do unbounded work, and YAML where JSON is asked
 * for is refused with a message that says so.
 *
 * Null is one thing: in JSON the plain scalar null; in YAML also ~, Null,
 * NULL and the empty plain scalar (YAML 1.2's core schema).
 *
 * Every error is one line in the caller's buffer: "NAME:LINE:COL: MESSAGE"
 * for a file, "NAME: line L column C: MESSAGE" for anything else (an HTTP
 * answer, a registration), values quoted and cut with control bytes as \xHH.
 * A reader is used by one thread at a time; each function returns 0, or -1
 * with the error written.
 */
#ifndef INTUTIC_YREAD_H
#define INTUTIC_YREAD_H

#include <stddef.h>

#include <yaml.h>

#define YREAD_QUOTE_MAX		40	/* bytes of a value in a message */
#define YREAD_NESTING_MAX	32	/* collections inside each other */

struct yread {
	yaml_parser_t	 parser;
	yaml_event_t	 ev;		/* the current event */
	int		 have_ev;
	int		 json;		/* JSON only */
	int		 depth;		/* collections open */
	const char	*name;		/* for messages */
	int		 is_file;	/* messages "NAME:LINE:COL: ..." */
	const char	*expect;	/* what an empty input lacks (YAML) */
	const char	*buf;
	size_t		 len;
	char		*err;
	size_t		 errlen;
};

/* A reader of buf[0..len), named name in its messages, errors into err. */
void	 yread_init(struct yread *p, const char *name, int is_file, int json,
	    const char *buf, size_t len, char *err, size_t errlen);

/*
 * Parses the input as one document whose root is a mapping (in JSON, an
 * object): `map` reads its pairs, from its start event (current when it is
 * called) to its end event (current when it returns).  Nothing may follow.
 */
int	 yread_run(struct yread *p, int (*map)(struct yread *, void *),
	    void *arg);

/* The next event (checked as said above), current from then on. */
int	 yread_next(struct yread *p);

/* Skips the value the current event starts. */
int	 yread_skip(struct yread *p);

/*
 * The current event as a key: which of names[0..n) it is, or n for another
 * one (its text, quoted and cut, in other); -1 when it is no string.
 */
int	 yread_key(struct yread *p, const char *const *names, int n,
	    char *other, size_t otherlen);

/* The current event is a string (in JSON, double-quoted) without NUL. */
int	 yread_string(struct yread *p, const char *key, const char *what);

/* The current event is null (see above). */
int	 yread_is_null(const struct yread *p);

/* The current event is the scalar `word`. */
int	 yread_scalar_is(const yaml_event_t *ev, const char *word);

/* What the current event is, for "found ..." ("null", "'text'", ...). */
const char	*yread_describe(const struct yread *p, char *buf, size_t len);

/* s[0..len) quoted and cut (YREAD_QUOTE_MAX), control bytes as \xHH. */
const char	*yread_quote(const char *s, size_t len, char *buf,
		    size_t buflen);

/* Writes the error "NAME...: MESSAGE" at mark m (NULL: none); -1. */
int	 yread_fail(struct yread *p, const yaml_mark_t *m, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));

#endif /* INTUTIC_YREAD_H */
