/*
 * yread.h — the one reader of YAML and JSON input: libyaml's event parser
 * with the checks every format of intutic wants.  Each event is checked as
 * it arrives: anchors, aliases and tags are refused, nesting is bounded
 * (YREAD_NESTING_MAX, or less for a format that sets nesting_max), and in
 * JSON mode (a JSON text is a YAML flow collection) only double-quoted
 * strings and JSON's literals pass, with no block collections and no
 * document markers.  So nothing a file or a server sends can make the
 * parser do unbounded work, and YAML where JSON is asked for is refused
 * with a message that says so.
 *
 * Null is one thing: in JSON the plain scalar null; in YAML also ~, Null,
 * NULL and the empty plain scalar (YAML 1.2's core schema).
 *
 * Every error is one line in the caller's buffer, in the form the reader
 * was made with (enum yread_form): "NAME:LINE:COL: MESSAGE" for a file,
 * "NAME: line L column C: MESSAGE" for anything else (an HTTP answer, a
 * registration), or MESSAGE alone with the position kept in the reader
 * (for a caller with its own error structure, such as rules/).  Values are
 * quoted and cut, with control bytes as \xHH.  A reader is used by one
 * thread at a time; each function returns 0, or -1 with the error written.
 * yread.c includes libc and libyaml only and never logs: it is libyread.a,
 * which rules/ links as well.
 */
#ifndef INTUTIC_YREAD_H
#define INTUTIC_YREAD_H

#include <stddef.h>

#include <yaml.h>

#define YREAD_QUOTE_MAX		100	/* bytes of a value in a message */
#define YREAD_QUOTE_BUF		(YREAD_QUOTE_MAX * 4 + 8) /* its quoted form */
#define YREAD_NESTING_MAX	32	/* collections inside each other */

/*
 * What the input is, and where an error's name and position go: TEXT is
 * anything but a file (an answer, a registration), FILE and BARE a file.
 */
enum yread_form {
	YREAD_TEXT,		/* "NAME: line L column C: MESSAGE" */
	YREAD_FILE,		/* a file: "NAME:LINE:COL: MESSAGE" */
	YREAD_BARE,		/* a file: "MESSAGE"; err_line, err_col apart */
};

/*
 * The fields from `expect` on describe the format; its reader sets them
 * after yread_init() and before yread_run(), or leaves them 0 for the
 * default:
 *   expect	what an empty YAML input lacks ("empty file: expected ...");
 *		the default is root
 *   root	what the root must be ("found a list: expected ..."); the
 *		default is "a mapping" (JSON: always "a JSON object")
 *   kind	the format's plural noun ("rule files"): anchors, aliases
 *		and tags are "not allowed in KIND" instead of "here", and an
 *		invalid byte adds "KIND are UTF-8 text"
 *   star_hint	added to the parse error of an unquoted value that starts
 *		with '*', which YAML reads as an alias ("; quote it")
 *   nesting_max a lower bound than YREAD_NESTING_MAX
 */
struct yread {
	yaml_parser_t	 parser;
	yaml_event_t	 ev;		/* the current event */
	int		 have_ev;
	int		 json;		/* JSON only */
	int		 depth;		/* collections open */
	const char	*name;		/* for messages */
	enum yread_form	 form;
	const char	*buf;
	size_t		 len;
	char		*err;
	size_t		 errlen;
	int		 failed;	/* yread_fail() wrote err */
	unsigned long	 err_line;	/* its position, 1-based; 0: none */
	unsigned long	 err_col;

	const char	*expect;
	const char	*root;
	const char	*kind;
	const char	*star_hint;
	int		 nesting_max;
};

/* A reader of buf[0..len), named name in its messages, errors into err. */
void	 yread_init(struct yread *p, const char *name, enum yread_form form,
	    int json, const char *buf, size_t len, char *err, size_t errlen);

/*
 * Parses the input as one document whose root is a mapping (in JSON, an
 * object): `map` reads its pairs, from its start event (current when it is
 * called) to its end event (current when it returns).  Nothing may follow.
 * When `map` fails without yread_fail() (an error of its own, such as one
 * in a file it read in turn), failed stays 0 and err as `map` left it.
 */
int	 yread_run(struct yread *p, int (*map)(struct yread *, void *),
	    void *arg);

/* The next event (checked as said above), current from then on. */
int	 yread_next(struct yread *p);

/*
 * The next event, which must be of `type`: else the error "found ...:
 * expected WHAT" at it.
 */
int	 yread_expect(struct yread *p, yaml_event_type_t type,
	    const char *what);

/* Skips the value the current event starts. */
int	 yread_skip(struct yread *p);

/*
 * The current event as a key: which of names[0..n) it is, or n for another
 * one (its text, quoted and cut, in other); -1 when it is no string.
 */
int	 yread_key(struct yread *p, const char *const *names, int n,
	    char *other, size_t otherlen);

/* What yread_pair() returns at the end of the mapping. */
#define YREAD_END		(-2)

/*
 * The next pair of the mapping being read (the current event its start,
 * or the end of the value before): the key as yread_key() tells it, with
 * the value's first event current; YREAD_END when the mapping ends there
 * (its end event current); -1 on an error.
 */
int	 yread_pair(struct yread *p, const char *const *names, int n,
	    char *other, size_t otherlen);

/* The current event is a string (in JSON, double-quoted) without NUL. */
int	 yread_string(struct yread *p, const char *key, const char *what);

/* The current event is null (see above). */
int	 yread_is_null(const struct yread *p);

/* The current event is the scalar `word`. */
int	 yread_scalar_is(const yaml_event_t *ev, const char *word);

/*
 * What the current event is, for "found ...": "a mapping" ("an object" in
 * JSON), "'text'", "nothing (null)" ("null" in JSON), ...
 */
const char	*yread_describe(const struct yread *p, char *buf, size_t len);

/*
 * At most `max` bytes of s[0..len) into buf, "..." where cut, control
 * bytes as \xHH, so that no line break or terminal escape reaches a
 * message; other bytes as they are.  Returns buf, always terminated
 * (buflen > 0).
 */
char	*yread_escape(char *buf, size_t buflen, const char *s, size_t len,
	    size_t max);

/* s[0..len) escaped, cut at YREAD_QUOTE_MAX and quoted; buf. */
const char	*yread_quote(const char *s, size_t len, char *buf,
		    size_t buflen);

/*
 * Writes the error at mark m (NULL: none) in the reader's form, sets
 * failed, err_line and err_col; returns -1.
 */
int	 yread_fail(struct yread *p, const yaml_mark_t *m, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));

#endif /* INTUTIC_YREAD_H */
