/*
 * usage.h — reads what a model API call used, for the provider gateway's
 * audit record: the model and stream flag a request body asks for, and
 * the model, id, stop reason, error type and token counts its response
 * names.
 *
 * Pure: no I/O, no libevent, no allocation.  The gateway relays both
 * bodies unchanged and unbuffered and hands the same bytes, de-chunked, to
 * these readers as they pass, in pieces of any size: a piece of one byte
 * and the whole body at once read the same (every reader is a state
 * machine fed byte by byte).  Memory is the structure the caller embeds,
 * fixed: no body, no event, no string beyond its limit is ever held.
 *
 * The APIs read (usage_api_of_path() says which a request speaks):
 *
 *  - Anthropic Messages (POST .../v1/messages): a message, or with
 *    "stream" the events message_start (message.model, message.id,
 *    message.usage), content_block_*, ping, message_delta
 *    (delta.stop_reason, and usage: cumulative, each field in the last
 *    message_delta replaces what came before), message_stop (the end) and
 *    error.
 *  - OpenAI Chat Completions (POST .../chat/completions): a completion,
 *    or chunks ended by "data: [DONE]"; the usage of a stream is in its
 *    last chunk (choices empty) when the request asked for it with
 *    stream_options.include_usage.
 *  - OpenAI Responses (POST .../responses): a response object, or events
 *    typed by "type": response.created and response.in_progress carry
 *    response.model and response.id, response.completed,
 *    response.incomplete and response.failed the final response.status,
 *    response.incomplete_details and response.usage.
 *
 * What is taken, by path from the root of the body or of an event's data
 * ("[]" is any element of an array):
 *
 *  - model: "model"; Anthropic's message_start "message.model"; Responses'
 *    events "response.model".
 *  - id: "id"; likewise "message.id", "response.id".
 *  - stop: Anthropic "stop_reason" and message_delta's
 *    "delta.stop_reason"; Chat "choices[].finish_reason", the first that
 *    is not null; Responses "incomplete_details.reason" when given, else
 *    "status", from the response object or a final event only.
 *  - input, output: Anthropic and Responses "usage.input_tokens",
 *    "usage.output_tokens"; Chat "usage.prompt_tokens",
 *    "usage.completion_tokens".
 *  - cache_read: Anthropic "usage.cache_read_input_tokens"; Chat
 *    "usage.prompt_tokens_details.cached_tokens"; Responses
 *    "usage.input_tokens_details.cached_tokens".
 *  - cache_write: Anthropic "usage.cache_creation_input_tokens" only.
 *  - reasoning: Chat "usage.completion_tokens_details.reasoning_tokens";
 *    Responses "usage.output_tokens_details.reasoning_tokens".
 *  - error: "error.type", else "error.code" (every API); for Responses
 *    also "response.error.code" and an error event's "code".  The text of
 *    an error's message is never kept.
 *
 * Anthropic's usage paths hold under "message." too (message_start), and
 * Responses' under "response." (the events, of which only
 * response.completed, response.incomplete and response.failed give
 * counts).  A string field takes JSON strings only, a count JSON integers
 * from 0 to INT64_MAX only: null, another type, a fraction, an exponent or
 * a number past int64 leaves the field as it was.  Otherwise the last
 * value read wins.
 *
 * JSON (RFC 8259) is read strictly: one value and white space around it;
 * a bad token, a bracket that does not match, a control character in a
 * string, anything after the value is malformed.  Strings are unescaped
 * (\uXXXX to UTF-8, a surrogate pair to one code point, a lone surrogate
 * and \u0000 to U+FFFD); bytes of 0x80 and up are taken as they come, not
 * checked as UTF-8.  A string longer than its field is cut, at a UTF-8
 * character boundary.  Paths are followed USAGE_JSON_DEPTH levels deep,
 * deeper values are checked but not looked at; nesting deeper than
 * USAGE_JSON_NEST_MAX is malformed.
 *
 * Server-sent events are read as the WHATWG HTML standard §9.2.6 says:
 * lines end in CRLF, LF or CR; a leading BOM is skipped; "field: value"
 * (one space after the colon dropped), a line without a colon a field with
 * an empty value, a line starting with ':' a comment; "data" lines are
 * joined with "\n", "event" names the event (cut at USAGE_EVENT_MAX - 1
 * bytes), other fields are ignored; a blank line dispatches the event when
 * it had a data line.  An event's data is one JSON value, read as it
 * arrives, or exactly "[DONE]" (OpenAI's end of stream); anything else is
 * malformed.  An event the stream ends in before its blank line is not
 * dispatched and counts for nothing.  An event's type is its data's
 * top-level "type", else its event name.
 *
 * Once malformed, a reader looks at nothing more: what it had read stays,
 * more bytes are accepted and ignored at no cost.
 */
#ifndef INTUTIC_USAGE_H
#define INTUTIC_USAGE_H

#include <stddef.h>
#include <stdint.h>

/* Limits, each with its NUL where it is a string. */
#define USAGE_MODEL_MAX		128	/* a model name */
#define USAGE_ID_MAX		128	/* a message or response id */
#define USAGE_STOP_MAX		64	/* a stop reason or status */
#define USAGE_ERROR_MAX		64	/* an error type */
#define USAGE_EVENT_MAX		64	/* an event's name or type */
#define USAGE_JSON_STR_MAX	128	/* a JSON string as the scanner keeps it */
#define USAGE_JSON_DEPTH	16	/* levels of a path followed */
#define USAGE_JSON_NEST_MAX	512	/* levels of nesting, else malformed */
#define USAGE_NCOUNTS		5	/* token counts in a result */

/* The API a request speaks. */
enum usage_api {
	USAGE_API_NONE = 0,	/* none this file reads */
	USAGE_API_ANTHROPIC,	/* Anthropic Messages */
	USAGE_API_CHAT,		/* OpenAI Chat Completions */
	USAGE_API_RESPONSES	/* OpenAI Responses */
};

/* What a response said of its usage. */
enum usage_state {
	USAGE_NONE = 0,		/* no token count at all */
	USAGE_PARTIAL,		/* some, but not the end that makes them final */
	USAGE_FINAL		/* the final counts: see usage_end() */
};

struct usage_result {
	char		 model[USAGE_MODEL_MAX];	/* "" when not named */
	char		 id[USAGE_ID_MAX];		/* "" */
	char		 stop[USAGE_STOP_MAX];		/* "" */
	char		 error[USAGE_ERROR_MAX];	/* "" */
	int64_t		 input;		/* tokens; -1 when not given */
	int64_t		 output;
	int64_t		 cache_read;
	int64_t		 cache_write;
	int64_t		 reasoning;
	enum usage_state state;
	int		 malformed;	/* not the JSON or events expected */
	unsigned int	 events;	/* events dispatched, [DONE] included */
};

/*
 * The readers' state.  Callers embed the structures and touch nothing in
 * them but through the functions below.
 */
struct usage_json {			/* a push JSON scanner */
	int		 state;
	int		 sub;		/* in a number or a literal */
	unsigned int	 depth;		/* containers open */
	uint8_t		 objects[USAGE_JSON_NEST_MAX / 8]; /* bit: an object */
	uint8_t		 path[USAGE_JSON_DEPTH];	/* key per level */
	int		 key;		/* the string is a key */
	char		 str[USAGE_JSON_STR_MAX];
	size_t		 len;
	int		 cut;		/* str lost bytes */
	uint32_t	 hex;		/* \uXXXX so far */
	unsigned int	 nhex;
	uint32_t	 high;		/* a high surrogate waiting, or 0 */
	uint64_t	 mag;		/* a number's magnitude */
	int		 neg;
	int		 integral;	/* no fraction, exponent or overflow */
	int		 value;		/* the scalar completed: its kind */
};

struct usage_fields {			/* what the body or one event said */
	char		 model[USAGE_MODEL_MAX];
	char		 id[USAGE_ID_MAX];
	char		 stop[USAGE_STOP_MAX];
	char		 status[USAGE_STOP_MAX];
	char		 reason[USAGE_STOP_MAX];
	char		 error[USAGE_ERROR_MAX];
	char		 code[USAGE_ERROR_MAX];
	char		 type[USAGE_EVENT_MAX];
	int64_t		 count[USAGE_NCOUNTS];	/* input .. reasoning, -1 */
};

struct usage_req {
	struct usage_json json;
	char		 model[USAGE_MODEL_MAX];
	int		 stream;
};

struct usage {
	enum usage_api	 api;
	int		 sse;
	struct usage_json json;
	struct usage_fields ev;		/* the body, or the event being read */
	struct usage_result res;	/* what dispatched events said */
	int		 final;		/* the final event was dispatched */
	int		 line;		/* where in an event-stream line */
	int		 field;		/* the line's field */
	char		 name[8];	/* the field's name so far */
	size_t		 namelen;
	char		 event[USAGE_EVENT_MAX];	/* the event's name */
	size_t		 eventlen;
	int		 cr;		/* the last byte was a CR */
	unsigned int	 bom;		/* bytes of a BOM read */
	int		 data;		/* the event has a data line */
	int		 done;		/* bytes of "[DONE]" held back, or -1 */
};

/*
 * The API a request path speaks, from path[0..len) (a query from '?' on is
 * not looked at): one ending in "/v1/messages" USAGE_API_ANTHROPIC, in
 * "/chat/completions" USAGE_API_CHAT, in "/responses" USAGE_API_RESPONSES,
 * any other (".../v1/messages/count_tokens", ".../responses/ID", a
 * trailing '/') USAGE_API_NONE.  Case counts.
 */
enum usage_api	 usage_api_of_path(const char *path, size_t len);

/*
 * A request body reader.  usage_req_begin() clears r for a new body;
 * usage_req_feed() reads its next len bytes (any split, len 0 too).  Then:
 * usage_req_model() is the top-level "model" string ("" when none, cut at
 * USAGE_MODEL_MAX - 1 bytes), usage_req_stream() the top-level "stream"
 * boolean, 1 or 0, -1 when absent or not a boolean.  Both hold what was
 * read up to the body's end, a cut or a malformed byte; the string lives
 * as long as r.
 */
void		 usage_req_begin(struct usage_req *r);
void		 usage_req_feed(struct usage_req *r, const void *buf,
		    size_t len);
const char	*usage_req_model(const struct usage_req *r);
int		 usage_req_stream(const struct usage_req *r);

/*
 * A response body reader.  usage_begin() clears u for a response of api
 * (USAGE_API_NONE: the body is checked and its events counted, nothing is
 * taken), an event stream when sse (the response's Content-Type is
 * text/event-stream), else one JSON value.  usage_feed() reads its next len
 * bytes (any split, len 0 too).  usage_end() says the body is over:
 * complete when it ended where its framing said (Content-Length, the last
 * chunk), 0 when cut; it fills *out, which holds nothing that points into
 * u.  Then u may be begun again.
 *
 * out->state is USAGE_FINAL when
 *  - JSON: the body was complete and well formed with a count in it;
 *  - Anthropic events: a message_stop was dispatched after a count;
 *  - Chat events: a chunk with a count was dispatched;
 *  - Responses events: response.completed, response.incomplete or
 *    response.failed was dispatched with a count;
 * USAGE_PARTIAL when there is a count but not that (a stream or a body
 * cut, or malformed, past its counts), USAGE_NONE when there is none.
 * A stream's end marker counts whether or not the body was complete.
 * out->malformed is set for a malformed byte, and for a JSON body that
 * was complete but ended before its value did (an empty one too); a body
 * cut short is not malformed.
 */
void		 usage_begin(struct usage *u, enum usage_api api, int sse);
void		 usage_feed(struct usage *u, const void *buf, size_t len);
void		 usage_end(struct usage *u, int complete,
		    struct usage_result *out);

#endif /* INTUTIC_USAGE_H */
