/*
 * usage.c — the provider gateway's usage reader (contract in usage.h).
 *
 * Three layers, each a state machine fed one byte at a time, so that how
 * the body is split never matters:
 *
 *  - json_byte(): a push JSON scanner.  It keeps one small string (a key
 *    or a scalar), the kind of each open container in a bit stack, and
 *    the key (an index in usage_keys[]) of each of the first
 *    USAGE_JSON_DEPTH levels; it hands each completed scalar back with
 *    that path.  A number ends on the byte after it, which is then given
 *    again (JSON_AGAIN).
 *  - sse_byte(): the event-stream line reader.  An event's data goes
 *    straight into a fresh JSON scan as it arrives, but for the bytes of
 *    a possible "[DONE]", held back until they can be nothing else.
 *  - usage_value() and usage_commit(): usage_rows[] maps a scalar's path
 *    to a field of the body or of the event being read (u->ev); the
 *    event's fields reach the result only when it is dispatched whole,
 *    then by its type and the API's rules.  A JSON body is committed at
 *    its end, whatever state it is in, so nothing read is lost.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "usage.h"

/* The scanner's states. */
enum {
	J_VALUE = 0,	/* a value */
	J_FIRST_VALUE,	/* a value or ']', after '[' */
	J_FIRST_KEY,	/* a key or '}', after '{' */
	J_KEY,		/* a key, after ',' in an object */
	J_COLON,	/* ':' after a key */
	J_NEXT,		/* ',' or the container's close; at depth 0 the end */
	J_STRING,	/* in a string */
	J_ESCAPE,	/* after '\' */
	J_HEX,		/* in \uXXXX */
	J_NUMBER,	/* in a number: sub is where */
	J_LITERAL,	/* in true, false or null: sub bytes read */
	J_BAD		/* malformed: nothing more is read */
};

/* Where in a number (RFC 8259 §6). */
enum {
	N_MINUS,	/* '-' */
	N_ZERO,		/* a leading 0: no digit may follow */
	N_INT,		/* integer digits */
	N_DOT,		/* '.': a digit must follow */
	N_FRAC,		/* fraction digits */
	N_E,		/* 'e': a sign or a digit must follow */
	N_SIGN,		/* the exponent's sign: a digit must follow */
	N_EXP		/* exponent digits */
};

/* What a completed scalar is (j->value). */
enum {
	JV_NONE = 0,
	JV_STRING,	/* j->str[0..j->len), NUL-terminated */
	JV_INT,		/* an integer within int64: json_int() */
	JV_NUMBER,	/* any other number */
	JV_TRUE,
	JV_FALSE,
	JV_NULL
};

/* What json_byte() returns. */
enum {
	JSON_MORE,	/* the byte was taken; nothing completed (or J_BAD) */
	JSON_VALUE,	/* the byte completed a scalar */
	JSON_AGAIN	/* a number ended before the byte: give it again */
};

/* The keys a path may hold; 0 is any other, UK_ELEM an array element. */
enum {
	UK_OTHER = 0,
	UK_MODEL,
	UK_ID,
	UK_TYPE,
	UK_STREAM,
	UK_STOP_REASON,
	UK_USAGE,
	UK_INPUT_TOKENS,
	UK_OUTPUT_TOKENS,
	UK_CACHE_READ_INPUT_TOKENS,
	UK_CACHE_CREATION_INPUT_TOKENS,
	UK_MESSAGE,
	UK_DELTA,
	UK_ERROR,
	UK_CODE,
	UK_CHOICES,
	UK_FINISH_REASON,
	UK_PROMPT_TOKENS,
	UK_COMPLETION_TOKENS,
	UK_PROMPT_TOKENS_DETAILS,
	UK_COMPLETION_TOKENS_DETAILS,
	UK_CACHED_TOKENS,
	UK_REASONING_TOKENS,
	UK_STATUS,
	UK_INCOMPLETE_DETAILS,
	UK_REASON,
	UK_INPUT_TOKENS_DETAILS,
	UK_OUTPUT_TOKENS_DETAILS,
	UK_RESPONSE,
	UK_NKEYS,
	UK_ELEM = 0xff
};

static const char *const usage_keys[UK_NKEYS] = {
	[UK_MODEL] = "model",
	[UK_ID] = "id",
	[UK_TYPE] = "type",
	[UK_STREAM] = "stream",
	[UK_STOP_REASON] = "stop_reason",
	[UK_USAGE] = "usage",
	[UK_INPUT_TOKENS] = "input_tokens",
	[UK_OUTPUT_TOKENS] = "output_tokens",
	[UK_CACHE_READ_INPUT_TOKENS] = "cache_read_input_tokens",
	[UK_CACHE_CREATION_INPUT_TOKENS] = "cache_creation_input_tokens",
	[UK_MESSAGE] = "message",
	[UK_DELTA] = "delta",
	[UK_ERROR] = "error",
	[UK_CODE] = "code",
	[UK_CHOICES] = "choices",
	[UK_FINISH_REASON] = "finish_reason",
	[UK_PROMPT_TOKENS] = "prompt_tokens",
	[UK_COMPLETION_TOKENS] = "completion_tokens",
	[UK_PROMPT_TOKENS_DETAILS] = "prompt_tokens_details",
	[UK_COMPLETION_TOKENS_DETAILS] = "completion_tokens_details",
	[UK_CACHED_TOKENS] = "cached_tokens",
	[UK_REASONING_TOKENS] = "reasoning_tokens",
	[UK_STATUS] = "status",
	[UK_INCOMPLETE_DETAILS] = "incomplete_details",
	[UK_REASON] = "reason",
	[UK_INPUT_TOKENS_DETAILS] = "input_tokens_details",
	[UK_OUTPUT_TOKENS_DETAILS] = "output_tokens_details",
	[UK_RESPONSE] = "response",
};

/* The fields of struct usage_fields a path fills. */
enum {
	UF_INPUT = 0,	/* count[] first, in struct usage_result's order */
	UF_OUTPUT,
	UF_CACHE_READ,
	UF_CACHE_WRITE,
	UF_REASONING,
	UF_NCOUNTS,	/* USAGE_NCOUNTS */
	UF_MODEL = UF_NCOUNTS,
	UF_ID,
	UF_STOP,
	UF_STATUS,
	UF_REASON,
	UF_ERROR,
	UF_CODE,
	UF_TYPE
};

_Static_assert(UF_NCOUNTS == USAGE_NCOUNTS, "count[] holds every count");

#define USAGE_PATH_MAX	4	/* keys of the longest path in usage_rows[] */
#define API(a)		(1u << (a))
#define ANT		API(USAGE_API_ANTHROPIC)
#define CHAT		API(USAGE_API_CHAT)
#define RESP		API(USAGE_API_RESPONSES)
#define ALL		(ANT | CHAT | RESP)

/* Which path fills which field, for which APIs (the table in usage.h). */
static const struct usage_row {
	unsigned int	 apis;
	int		 field;
	uint8_t		 keys[USAGE_PATH_MAX];	/* 0 ends it */
} usage_rows[] = {
	{ ALL, UF_MODEL, { UK_MODEL } },
	{ ALL, UF_ID, { UK_ID } },
	{ ALL, UF_TYPE, { UK_TYPE } },
	{ ALL, UF_ERROR, { UK_ERROR, UK_TYPE } },
	{ ALL, UF_CODE, { UK_ERROR, UK_CODE } },
	{ ANT | RESP, UF_INPUT, { UK_USAGE, UK_INPUT_TOKENS } },
	{ ANT | RESP, UF_OUTPUT, { UK_USAGE, UK_OUTPUT_TOKENS } },

	/* Anthropic: a message; message_start's message; message_delta */
	{ ANT, UF_STOP, { UK_STOP_REASON } },
	{ ANT, UF_CACHE_READ, { UK_USAGE, UK_CACHE_READ_INPUT_TOKENS } },
	{ ANT, UF_CACHE_WRITE, { UK_USAGE, UK_CACHE_CREATION_INPUT_TOKENS } },
	{ ANT, UF_MODEL, { UK_MESSAGE, UK_MODEL } },
	{ ANT, UF_ID, { UK_MESSAGE, UK_ID } },
	{ ANT, UF_STOP, { UK_MESSAGE, UK_STOP_REASON } },
	{ ANT, UF_INPUT, { UK_MESSAGE, UK_USAGE, UK_INPUT_TOKENS } },
	{ ANT, UF_OUTPUT, { UK_MESSAGE, UK_USAGE, UK_OUTPUT_TOKENS } },
	{ ANT, UF_CACHE_READ,
	    { UK_MESSAGE, UK_USAGE, UK_CACHE_READ_INPUT_TOKENS } },
	{ ANT, UF_CACHE_WRITE,
	    { UK_MESSAGE, UK_USAGE, UK_CACHE_CREATION_INPUT_TOKENS } },
	{ ANT, UF_STOP, { UK_DELTA, UK_STOP_REASON } },

	/* Chat Completions: a completion or a chunk */
	{ CHAT, UF_STOP, { UK_CHOICES, UK_ELEM, UK_FINISH_REASON } },
	{ CHAT, UF_INPUT, { UK_USAGE, UK_PROMPT_TOKENS } },
	{ CHAT, UF_OUTPUT, { UK_USAGE, UK_COMPLETION_TOKENS } },
	{ CHAT, UF_CACHE_READ,
	    { UK_USAGE, UK_PROMPT_TOKENS_DETAILS, UK_CACHED_TOKENS } },
	{ CHAT, UF_REASONING,
	    { UK_USAGE, UK_COMPLETION_TOKENS_DETAILS, UK_REASONING_TOKENS } },

	/* Responses: a response; an event's response; an error event */
	{ RESP, UF_STATUS, { UK_STATUS } },
	{ RESP, UF_REASON, { UK_INCOMPLETE_DETAILS, UK_REASON } },
	{ RESP, UF_CACHE_READ,
	    { UK_USAGE, UK_INPUT_TOKENS_DETAILS, UK_CACHED_TOKENS } },
	{ RESP, UF_REASONING,
	    { UK_USAGE, UK_OUTPUT_TOKENS_DETAILS, UK_REASONING_TOKENS } },
	{ RESP, UF_MODEL, { UK_RESPONSE, UK_MODEL } },
	{ RESP, UF_ID, { UK_RESPONSE, UK_ID } },
	{ RESP, UF_STATUS, { UK_RESPONSE, UK_STATUS } },
	{ RESP, UF_REASON, { UK_RESPONSE, UK_INCOMPLETE_DETAILS, UK_REASON } },
	{ RESP, UF_CODE, { UK_RESPONSE, UK_ERROR, UK_CODE } },
	{ RESP, UF_INPUT, { UK_RESPONSE, UK_USAGE, UK_INPUT_TOKENS } },
	{ RESP, UF_OUTPUT, { UK_RESPONSE, UK_USAGE, UK_OUTPUT_TOKENS } },
	{ RESP, UF_CACHE_READ, { UK_RESPONSE, UK_USAGE,
	    UK_INPUT_TOKENS_DETAILS, UK_CACHED_TOKENS } },
	{ RESP, UF_REASONING, { UK_RESPONSE, UK_USAGE,
	    UK_OUTPUT_TOKENS_DETAILS, UK_REASONING_TOKENS } },
	{ RESP, UF_CODE, { UK_CODE } },
};
#define USAGE_NROWS	(sizeof(usage_rows) / sizeof(usage_rows[0]))

/* The event-stream line reader: where in a line, which field. */
enum {
	L_START = 0,	/* at a line's start */
	L_NAME,		/* in the field's name */
	L_SPACE,	/* after the colon: one space to drop */
	L_VALUE,	/* in the value */
	L_COMMENT	/* in a comment */
};
enum {
	SF_OTHER = 0,
	SF_DATA,
	SF_EVENT
};

#define SSE_DONE	"[DONE]"
#define SSE_DONE_LEN	(sizeof(SSE_DONE) - 1)

static const uint8_t	 sse_bom[3] = { 0xef, 0xbb, 0xbf };

static size_t	 utf8_fit(const char *, size_t);
static void	 copy_text(char *, size_t, const char *, size_t);
static void	 json_begin(struct usage_json *);
static int	 json_in_object(const struct usage_json *);
static void	 json_put(struct usage_json *, const char *, size_t);
static void	 json_put_cp(struct usage_json *, uint32_t);
static int	 json_push(struct usage_json *, int);
static int	 json_pop(struct usage_json *, int);
static int	 json_start(struct usage_json *, int);
static uint8_t	 json_key(const struct usage_json *);
static int	 json_string(struct usage_json *, int);
static int	 json_hex(struct usage_json *, int);
static int	 json_number(struct usage_json *, int);
static int	 json_number_end(struct usage_json *);
static int	 json_byte(struct usage_json *, int);
static int	 json_end(struct usage_json *);
static int	 json_complete(const struct usage_json *);
static int64_t	 json_int(const struct usage_json *);
static void	 fields_clear(struct usage_fields *);
static int	 fields_counted(const int64_t *);
static int	 result_counted(const struct usage_result *);
static void	 usage_value(struct usage *);
static void	 usage_json_byte(struct usage *, int);
static void	 usage_commit(struct usage *);
static void	 sse_field(struct usage *);
static void	 sse_release(struct usage *);
static void	 sse_data(struct usage *, int);
static void	 sse_dispatch(struct usage *);
static void	 sse_eol(struct usage *);
static void	 sse_byte(struct usage *, int);
static void	 req_value(struct usage_req *);

/*
 * The longest prefix of s[0..n), n <= its length, that does not end inside
 * a UTF-8 sequence, s being cut after n bytes.
 */
static size_t
utf8_fit(const char *s, size_t n)
{
	const uint8_t	*p = (const uint8_t *)s;
	size_t		 k = n, need;

	while (k > 0 && n - k < 3 && (p[k - 1] & 0xc0) == 0x80)
		k--;
	if (k == 0 || p[k - 1] < 0xc0)
		return n;
	need = p[k - 1] >= 0xf0 ? 4 : p[k - 1] >= 0xe0 ? 3 : 2;
	return n - (k - 1) < need ? k - 1 : n;
}

/* s[0..len) into dst (size bytes), cut at a character when longer. */
static void
copy_text(char *dst, size_t size, const char *s, size_t len)
{
	if (len >= size)
		len = utf8_fit(s, size - 1);
	memcpy(dst, s, len);
	dst[len] = '\0';
}

/* ------------------------------------------------------------ JSON */

static void
json_begin(struct usage_json *j)
{
	memset(j, 0, sizeof(*j));
	j->state = J_VALUE;
}

static int
json_in_object(const struct usage_json *j)
{
	unsigned int	 d;

	if (j->depth == 0)
		return 0;
	d = j->depth - 1;
	return (j->objects[d / 8] >> (d % 8)) & 1;
}

/* Appends b[0..n) to the string, or cuts it there for good. */
static void
json_put(struct usage_json *j, const char *b, size_t n)
{
	if (j->cut || n > sizeof(j->str) - 1 - j->len) {
		j->cut = 1;
		return;
	}
	memcpy(j->str + j->len, b, n);
	j->len += n;
}

/* Appends code point cp as UTF-8: \u0000 becomes U+FFFD. */
static void
json_put_cp(struct usage_json *j, uint32_t cp)
{
	char	 b[4];
	size_t	 n;

	if (cp == 0)
		cp = 0xfffd;
	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	json_put(j, b, n);
}

/* Opens an object (1) or an array (0). */
static int
json_push(struct usage_json *j, int object)
{
	unsigned int	 d = j->depth;

	if (d >= USAGE_JSON_NEST_MAX) {
		j->state = J_BAD;
		return JSON_MORE;
	}
	if (object)
		j->objects[d / 8] |= (uint8_t)(1u << (d % 8));
	else
		j->objects[d / 8] &= (uint8_t)~(1u << (d % 8));
	if (d < USAGE_JSON_DEPTH)
		j->path[d] = object ? UK_OTHER : UK_ELEM;
	j->depth++;
	j->state = object ? J_FIRST_KEY : J_FIRST_VALUE;
	return JSON_MORE;
}

/* Closes an object (1) or an array (0): it must be the one open. */
static int
json_pop(struct usage_json *j, int object)
{
	if (j->depth == 0 || json_in_object(j) != object) {
		j->state = J_BAD;
		return JSON_MORE;
	}
	j->depth--;
	j->state = J_NEXT;
	return JSON_MORE;
}

/* The first byte of a value. */
static int
json_start(struct usage_json *j, int c)
{
	j->value = JV_NONE;
	switch (c) {
	case '{':
		return json_push(j, 1);
	case '[':
		return json_push(j, 0);
	case '"':
		j->key = 0;
		j->len = 0;
		j->cut = 0;
		j->high = 0;
		j->state = J_STRING;
		return JSON_MORE;
	case 't':
	case 'f':
	case 'n':
		j->value = c == 't' ? JV_TRUE : c == 'f' ? JV_FALSE : JV_NULL;
		j->sub = 1;
		j->state = J_LITERAL;
		return JSON_MORE;
	case '-':
		j->neg = 1;
		j->mag = 0;
		j->integral = 1;
		j->sub = N_MINUS;
		j->state = J_NUMBER;
		return JSON_MORE;
	}
	if (c >= '0' && c <= '9') {
		j->neg = 0;
		j->mag = (uint64_t)(c - '0');
		j->integral = 1;
		j->sub = c == '0' ? N_ZERO : N_INT;
		j->state = J_NUMBER;
		return JSON_MORE;
	}
	j->state = J_BAD;
	return JSON_MORE;
}

/* A key's index in usage_keys[], UK_OTHER when not there. */
static uint8_t
json_key(const struct usage_json *j)
{
	uint8_t	 k;

	if (j->cut)
		return UK_OTHER;
	for (k = 1; k < UK_NKEYS; k++)
		if (strlen(usage_keys[k]) == j->len &&
		    memcmp(usage_keys[k], j->str, j->len) == 0)
			return k;
	return UK_OTHER;
}

static int
json_string(struct usage_json *j, int c)
{
	char	 b = (char)c;

	if (c == '\\') {
		j->state = J_ESCAPE;	/* a waiting high surrogate waits on */
		return JSON_MORE;
	}
	if (c < 0x20) {
		j->state = J_BAD;
		return JSON_MORE;
	}
	if (j->high != 0) {
		json_put_cp(j, 0xfffd);	/* a lone high surrogate */
		j->high = 0;
	}
	if (c != '"') {
		json_put(j, &b, 1);
		return JSON_MORE;
	}
	if (j->cut)
		j->len = utf8_fit(j->str, j->len);
	j->str[j->len] = '\0';
	if (j->key) {
		if (j->depth <= USAGE_JSON_DEPTH)
			j->path[j->depth - 1] = json_key(j);
		j->state = J_COLON;
		return JSON_MORE;
	}
	j->value = JV_STRING;
	j->state = J_NEXT;
	return JSON_VALUE;
}

/* A digit of \uXXXX; the fourth ends it. */
static int
json_hex(struct usage_json *j, int c)
{
	uint32_t	 cp;

	if (c >= '0' && c <= '9')
		j->hex = j->hex << 4 | (uint32_t)(c - '0');
	else if (c >= 'a' && c <= 'f')
		j->hex = j->hex << 4 | (uint32_t)(c - 'a' + 10);
	else if (c >= 'A' && c <= 'F')
		j->hex = j->hex << 4 | (uint32_t)(c - 'A' + 10);
	else {
		j->state = J_BAD;
		return JSON_MORE;
	}
	if (++j->nhex < 4)
		return JSON_MORE;
	cp = j->hex;
	j->state = J_STRING;
	if (j->high != 0) {
		if (cp >= 0xdc00 && cp <= 0xdfff) {
			json_put_cp(j, 0x10000 + ((j->high - 0xd800) << 10) +
			    (cp - 0xdc00));
			j->high = 0;
			return JSON_MORE;
		}
		json_put_cp(j, 0xfffd);
		j->high = 0;
	}
	if (cp >= 0xd800 && cp <= 0xdbff)
		j->high = cp;
	else if (cp >= 0xdc00 && cp <= 0xdfff)
		json_put_cp(j, 0xfffd);
	else
		json_put_cp(j, cp);
	return JSON_MORE;
}

/* The number ends before the byte at hand. */
static int
json_number_end(struct usage_json *j)
{
	j->value = j->integral ? JV_INT : JV_NUMBER;
	j->state = J_NEXT;
	return JSON_AGAIN;
}

static int
json_number(struct usage_json *j, int c)
{
	int		 digit = c >= '0' && c <= '9';
	uint64_t	 lim = j->neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX;

	switch (j->sub) {
	case N_MINUS:
		if (!digit)
			break;
		j->mag = (uint64_t)(c - '0');
		j->sub = c == '0' ? N_ZERO : N_INT;
		return JSON_MORE;
	case N_ZERO:
	case N_INT:
		if (digit && j->sub == N_INT) {
			if (j->integral &&
			    j->mag > (lim - (uint64_t)(c - '0')) / 10)
				j->integral = 0;	/* past int64 */
			j->mag = j->mag * 10 + (uint64_t)(c - '0');
			return JSON_MORE;
		}
		if (digit)
			break;		/* a leading zero */
		if (c == '.') {
			j->sub = N_DOT;
			return JSON_MORE;
		}
		if (c == 'e' || c == 'E') {
			j->sub = N_E;
			j->integral = 0;
			return JSON_MORE;
		}
		return json_number_end(j);
	case N_DOT:
		if (!digit)
			break;
		j->integral = 0;
		j->sub = N_FRAC;
		return JSON_MORE;
	case N_FRAC:
		if (digit)
			return JSON_MORE;
		if (c == 'e' || c == 'E') {
			j->sub = N_E;
			return JSON_MORE;
		}
		return json_number_end(j);
	case N_E:
		if (c == '+' || c == '-') {
			j->sub = N_SIGN;
			return JSON_MORE;
		}
		/* FALLTHROUGH */
	case N_SIGN:
		if (!digit)
			break;
		j->sub = N_EXP;
		return JSON_MORE;
	case N_EXP:
		if (digit)
			return JSON_MORE;
		return json_number_end(j);
	}
	j->state = J_BAD;
	return JSON_MORE;
}

/* One byte c (0..255): JSON_MORE, JSON_VALUE or JSON_AGAIN. */
static int
json_byte(struct usage_json *j, int c)
{
	static const char *const literals[] = {
		[JV_TRUE] = "true", [JV_FALSE] = "false", [JV_NULL] = "null"
	};
	int	 ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';

	switch (j->state) {
	case J_VALUE:
		return ws ? JSON_MORE : json_start(j, c);
	case J_FIRST_VALUE:
		if (ws)
			return JSON_MORE;
		return c == ']' ? json_pop(j, 0) : json_start(j, c);
	case J_FIRST_KEY:
	case J_KEY:
		if (ws)
			return JSON_MORE;
		if (c == '}' && j->state == J_FIRST_KEY)
			return json_pop(j, 1);
		if (c != '"')
			break;
		j->key = 1;
		j->len = 0;
		j->cut = 0;
		j->high = 0;
		j->state = J_STRING;
		return JSON_MORE;
	case J_COLON:
		if (ws)
			return JSON_MORE;
		if (c != ':')
			break;
		j->state = J_VALUE;
		return JSON_MORE;
	case J_NEXT:
		if (ws)
			return JSON_MORE;
		if (c == '}' || c == ']')
			return json_pop(j, c == '}');
		if (c != ',' || j->depth == 0)
			break;
		j->state = json_in_object(j) ? J_KEY : J_VALUE;
		return JSON_MORE;
	case J_STRING:
		return json_string(j, c);
	case J_ESCAPE:
		j->state = J_STRING;
		if (c == 'u') {
			j->hex = 0;
			j->nhex = 0;
			j->state = J_HEX;
			return JSON_MORE;
		}
		if (j->high != 0) {
			json_put_cp(j, 0xfffd);
			j->high = 0;
		}
		switch (c) {
		case '"': case '\\': case '/':
			json_put_cp(j, (uint32_t)c);
			return JSON_MORE;
		case 'b':
			json_put_cp(j, '\b');
			return JSON_MORE;
		case 'f':
			json_put_cp(j, '\f');
			return JSON_MORE;
		case 'n':
			json_put_cp(j, '\n');
			return JSON_MORE;
		case 'r':
			json_put_cp(j, '\r');
			return JSON_MORE;
		case 't':
			json_put_cp(j, '\t');
			return JSON_MORE;
		}
		break;
	case J_HEX:
		return json_hex(j, c);
	case J_NUMBER:
		return json_number(j, c);
	case J_LITERAL:
		if (c != literals[j->value][j->sub])
			break;
		if (literals[j->value][++j->sub] != '\0')
			return JSON_MORE;
		j->state = J_NEXT;
		return JSON_VALUE;
	case J_BAD:
		return JSON_MORE;
	}
	j->state = J_BAD;
	return JSON_MORE;
}

/* The input ended: a number at the top level ends with it. */
static int
json_end(struct usage_json *j)
{
	if (j->state == J_NUMBER && (j->sub == N_ZERO || j->sub == N_INT ||
	    j->sub == N_FRAC || j->sub == N_EXP)) {
		(void)json_number_end(j);
		return JSON_VALUE;
	}
	return JSON_MORE;
}

/* One whole value was read and nothing but white space after it. */
static int
json_complete(const struct usage_json *j)
{
	return j->state == J_NEXT && j->depth == 0;
}

static int64_t
json_int(const struct usage_json *j)
{
	if (!j->neg)
		return (int64_t)j->mag;
	if (j->mag == (uint64_t)INT64_MAX + 1)
		return INT64_MIN;
	return -(int64_t)j->mag;
}

/* ------------------------------------------------- the usage fields */

static void
fields_clear(struct usage_fields *f)
{
	int	 i;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < UF_NCOUNTS; i++)
		f->count[i] = -1;
}

static int
fields_counted(const int64_t *count)
{
	int	 i;

	for (i = 0; i < UF_NCOUNTS; i++)
		if (count[i] >= 0)
			return 1;
	return 0;
}

static int
result_counted(const struct usage_result *res)
{
	return res->input >= 0 || res->output >= 0 || res->cache_read >= 0 ||
	    res->cache_write >= 0 || res->reasoning >= 0;
}

/* A scalar completed: into the field its path names, if any. */
static void
usage_value(struct usage *u)
{
	const struct usage_json	*j = &u->json;
	const struct usage_row	*row;
	struct usage_fields	*f = &u->ev;
	size_t			 i, k;
	char			*dst;
	size_t			 size;

	if (j->depth == 0 || j->depth > USAGE_PATH_MAX)
		return;
	for (i = 0; i < USAGE_NROWS; i++) {
		row = &usage_rows[i];
		if ((row->apis & API(u->api)) == 0)
			continue;
		for (k = 0; k < j->depth; k++)
			if (row->keys[k] == UK_OTHER ||
			    row->keys[k] != j->path[k])
				break;
		if (k == j->depth && (k == USAGE_PATH_MAX || row->keys[k] == 0))
			break;
	}
	if (i == USAGE_NROWS)
		return;
	if (row->field < UF_NCOUNTS) {
		if (j->value == JV_INT && json_int(j) >= 0)
			f->count[row->field] = json_int(j);
		return;
	}
	if (j->value != JV_STRING)
		return;
	switch (row->field) {
	case UF_MODEL:
		dst = f->model;
		size = sizeof(f->model);
		break;
	case UF_ID:
		dst = f->id;
		size = sizeof(f->id);
		break;
	case UF_STOP:
		if (u->api == USAGE_API_CHAT && f->stop[0] != '\0')
			return;		/* the first choice's that is not null */
		dst = f->stop;
		size = sizeof(f->stop);
		break;
	case UF_STATUS:
		dst = f->status;
		size = sizeof(f->status);
		break;
	case UF_REASON:
		dst = f->reason;
		size = sizeof(f->reason);
		break;
	case UF_ERROR:
		dst = f->error;
		size = sizeof(f->error);
		break;
	case UF_CODE:
		dst = f->code;
		size = sizeof(f->code);
		break;
	default:
		dst = f->type;
		size = sizeof(f->type);
		break;
	}
	copy_text(dst, size, j->str, j->len);
}

/* One byte of the body or of an event's data into the JSON scan. */
static void
usage_json_byte(struct usage *u, int c)
{
	int	 r;

	r = json_byte(&u->json, c);
	if (r != JSON_MORE) {
		usage_value(u);
		if (r == JSON_AGAIN)
			(void)json_byte(&u->json, c);	/* J_NEXT: MORE */
	}
	if (u->json.state == J_BAD)
		u->res.malformed = 1;
}

/* What the body, or an event dispatched whole, said: into the result. */
static void
usage_commit(struct usage *u)
{
	struct usage_fields	*f = &u->ev;
	struct usage_result	*res = &u->res;
	int64_t			*count[UF_NCOUNTS];
	const char		*type = f->type[0] != '\0' ? f->type : u->event;
	const char		*stop, *err;
	int			 i, last = 1, counted;

	if (u->api == USAGE_API_NONE)
		return;
	if (f->model[0] != '\0')
		copy_text(res->model, sizeof(res->model), f->model,
		    strlen(f->model));
	if (f->id[0] != '\0')
		copy_text(res->id, sizeof(res->id), f->id, strlen(f->id));
	err = f->error[0] != '\0' ? f->error : f->code;
	if (err[0] != '\0')
		copy_text(res->error, sizeof(res->error), err, strlen(err));
	stop = f->stop;
	if (u->api == USAGE_API_RESPONSES) {
		/* Only the final events' status and usage are the call's. */
		last = !u->sse || strcmp(type, "response.completed") == 0 ||
		    strcmp(type, "response.incomplete") == 0 ||
		    strcmp(type, "response.failed") == 0;
		stop = last ? (f->reason[0] != '\0' ? f->reason : f->status) :
		    "";
	}
	if (stop[0] != '\0' && (u->api != USAGE_API_CHAT ||
	    res->stop[0] == '\0'))
		copy_text(res->stop, sizeof(res->stop), stop, strlen(stop));

	count[UF_INPUT] = &res->input;
	count[UF_OUTPUT] = &res->output;
	count[UF_CACHE_READ] = &res->cache_read;
	count[UF_CACHE_WRITE] = &res->cache_write;
	count[UF_REASONING] = &res->reasoning;
	counted = last && fields_counted(f->count);
	for (i = 0; last && i < UF_NCOUNTS; i++)
		if (f->count[i] >= 0)
			*count[i] = f->count[i];

	if (!u->sse)
		return;
	switch (u->api) {
	case USAGE_API_ANTHROPIC:
		if (strcmp(type, "message_stop") == 0 && result_counted(res))
			u->final = 1;
		break;
	case USAGE_API_CHAT:
	case USAGE_API_RESPONSES:
		if (counted)
			u->final = 1;
		break;
	default:
		break;
	}
}

/* ---------------------------------------------------- event streams */

/* The field's name is complete: which field, and its start. */
static void
sse_field(struct usage *u)
{
	u->field = SF_OTHER;
	if (u->namelen == 4 && memcmp(u->name, "data", 4) == 0)
		u->field = SF_DATA;
	else if (u->namelen == 5 && memcmp(u->name, "event", 5) == 0)
		u->field = SF_EVENT;
	if (u->field == SF_EVENT) {
		u->eventlen = 0;
		u->event[0] = '\0';
	} else if (u->field == SF_DATA) {
		if (!u->data) {
			u->data = 1;
			json_begin(&u->json);
			fields_clear(&u->ev);
			u->done = 0;
		} else
			sse_data(u, '\n');	/* lines joined by LF */
	}
}

/* The bytes held back as a possible "[DONE]" are not: to the scan. */
static void
sse_release(struct usage *u)
{
	int	 i, n = u->done;

	u->done = -1;
	for (i = 0; i < n && !u->res.malformed; i++)
		usage_json_byte(u, SSE_DONE[i]);
}

/* A byte of an event's data, held back while it may be "[DONE]". */
static void
sse_data(struct usage *u, int c)
{
	if (u->done >= 0) {
		if ((size_t)u->done < SSE_DONE_LEN && c == SSE_DONE[u->done]) {
			u->done++;
			return;
		}
		sse_release(u);
	}
	if (!u->res.malformed)
		usage_json_byte(u, c);
}

/* A blank line: the event, if it had data, is dispatched. */
static void
sse_dispatch(struct usage *u)
{
	int	 held = u->data && u->done == (int)SSE_DONE_LEN;

	if (u->data) {
		u->data = 0;
		u->res.events++;
		if (!held)
			sse_release(u);
		if (!held && !u->res.malformed) {
			if (json_end(&u->json) == JSON_VALUE)
				usage_value(u);
			if (json_complete(&u->json))
				usage_commit(u);
			else
				u->res.malformed = 1;
		}
	}
	u->eventlen = 0;
	u->event[0] = '\0';
}

static void
sse_eol(struct usage *u)
{
	if (u->line == L_START)
		sse_dispatch(u);
	else if (u->line == L_NAME)
		sse_field(u);		/* no colon: the value is "" */
	u->line = L_START;
}

static void
sse_byte(struct usage *u, int c)
{
	if (u->bom < sizeof(sse_bom)) {
		if (c == sse_bom[u->bom]) {
			u->bom++;
			return;
		}
		if (u->bom > 0) {
			/* Part of a BOM: the start of a name none has. */
			u->line = L_NAME;
			u->namelen = sizeof(u->name) + 1;
		}
		u->bom = sizeof(sse_bom);
	}
	if (c == '\n' && u->cr) {
		u->cr = 0;
		return;
	}
	u->cr = c == '\r';
	if (c == '\r' || c == '\n') {
		sse_eol(u);
		return;
	}
	switch (u->line) {
	case L_START:
		if (c == ':') {
			u->line = L_COMMENT;
			return;
		}
		u->line = L_NAME;
		u->namelen = 0;
		/* FALLTHROUGH */
	case L_NAME:
		if (c == ':') {
			sse_field(u);
			u->line = L_SPACE;
		} else if (u->namelen <= sizeof(u->name)) {
			if (u->namelen < sizeof(u->name))
				u->name[u->namelen] = (char)c;
			u->namelen++;
		}
		return;
	case L_SPACE:
		u->line = L_VALUE;
		if (c == ' ')
			return;
		/* FALLTHROUGH */
	case L_VALUE:
		if (u->field == SF_DATA)
			sse_data(u, c);
		else if (u->field == SF_EVENT &&
		    u->eventlen < sizeof(u->event) - 1) {
			u->event[u->eventlen++] = (char)c;
			u->event[u->eventlen] = '\0';
		}
		return;
	default:
		return;		/* a comment */
	}
}

/* ------------------------------------------------------ the contract */

enum usage_api
usage_api_of_path(const char *path, size_t len)
{
	static const struct {
		const char	*end;
		enum usage_api	 api;
	} ends[] = {
		{ "/v1/messages", USAGE_API_ANTHROPIC },
		{ "/chat/completions", USAGE_API_CHAT },
		{ "/responses", USAGE_API_RESPONSES },
	};
	const char	*q;
	size_t		 i, n;

	if (path == NULL)
		return USAGE_API_NONE;
	if ((q = memchr(path, '?', len)) != NULL)
		len = (size_t)(q - path);
	for (i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		n = strlen(ends[i].end);
		if (len >= n && memcmp(path + len - n, ends[i].end, n) == 0)
			return ends[i].api;
	}
	return USAGE_API_NONE;
}

void
usage_req_begin(struct usage_req *r)
{
	memset(r, 0, sizeof(*r));
	json_begin(&r->json);
	r->stream = -1;
}

/* A scalar of the request: its top-level "model" and "stream". */
static void
req_value(struct usage_req *r)
{
	const struct usage_json	*j = &r->json;

	if (j->depth != 1 || !json_in_object(j))
		return;
	if (j->path[0] == UK_MODEL && j->value == JV_STRING)
		copy_text(r->model, sizeof(r->model), j->str, j->len);
	else if (j->path[0] == UK_STREAM &&
	    (j->value == JV_TRUE || j->value == JV_FALSE))
		r->stream = j->value == JV_TRUE;
}

void
usage_req_feed(struct usage_req *r, const void *buf, size_t len)
{
	const uint8_t	*p = buf;
	size_t		 i;
	int		 v;

	for (i = 0; i < len && r->json.state != J_BAD; i++) {
		v = json_byte(&r->json, p[i]);
		if (v == JSON_MORE)
			continue;
		req_value(r);
		if (v == JSON_AGAIN)
			(void)json_byte(&r->json, p[i]);
	}
}

const char *
usage_req_model(const struct usage_req *r)
{
	return r->model;
}

int
usage_req_stream(const struct usage_req *r)
{
	return r->stream;
}

void
usage_begin(struct usage *u, enum usage_api api, int sse)
{
	memset(u, 0, sizeof(*u));
	switch (api) {
	case USAGE_API_ANTHROPIC:
	case USAGE_API_CHAT:
	case USAGE_API_RESPONSES:
		u->api = api;
		break;
	default:
		u->api = USAGE_API_NONE;	/* API() shifts by it */
		break;
	}
	u->sse = sse != 0;
	json_begin(&u->json);
	fields_clear(&u->ev);
	u->res.input = u->res.output = u->res.cache_read = -1;
	u->res.cache_write = u->res.reasoning = -1;
	u->line = L_START;
	u->bom = u->sse ? 0 : sizeof(sse_bom);
	u->done = -1;
}

void
usage_feed(struct usage *u, const void *buf, size_t len)
{
	const uint8_t	*p = buf;
	size_t		 i;

	for (i = 0; i < len && !u->res.malformed; i++) {
		if (u->sse)
			sse_byte(u, p[i]);
		else
			usage_json_byte(u, p[i]);
	}
}

void
usage_end(struct usage *u, int complete, struct usage_result *out)
{
	int	 whole = 0;

	if (!u->sse) {
		if (!u->res.malformed) {
			if (json_end(&u->json) == JSON_VALUE)
				usage_value(u);
			whole = json_complete(&u->json);
			if (!whole && complete)
				u->res.malformed = 1;
		}
		usage_commit(u);
		u->final = whole && complete;
	}
	/* An event the stream ended in is not dispatched: u->ev is dropped. */
	*out = u->res;
	if (!result_counted(out))
		out->state = USAGE_NONE;
	else
		out->state = u->final ? USAGE_FINAL : USAGE_PARTIAL;
}
