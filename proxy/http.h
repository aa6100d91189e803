/*
 * http.h — HTTP/1.1 for the proxy: request heads, message framing and the
 * proxy's own answers.  http.c is the one file that uses llhttp, always
 * a strict build (configure tests it; http_parser_strict() says so at run
 * time) with no lenient flag ever set, plus the checks strict llhttp lacks;
 * http-text.c what needs no parser (heads forwarded, targets split, the
 * proxy's answers).
 */
#ifndef INTUTIC_HTTP_H
#define INTUTIC_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct rules_host;

#define HTTP_METHOD_MAX		24	/* bytes of a method token */
#define HTTP_HEADERS_LIMIT	256	/* hard cap on the header table */
#define HTTP_CHUNK_LINE_MAX	4096	/* bytes of a chunk-size line, its
					   extensions and CRLF included */
#define HTTP_TRAILERS_MAX	8192	/* bytes of a trailer section */

struct http_header {
	const char	*name;		/* into the head buffer; not NUL-ended */
	size_t		 name_len;
	const char	*value;
	size_t		 value_len;
};

/*
 * A parsed request (or response) head.  Pointers point into the buffer given
 * to http_head_parse(), which must outlive the head.
 */
struct http_head {
	int			 response;
	char			 method[HTTP_METHOD_MAX];
	int			 is_connect;
	int			 is_head;	/* HEAD request */
	const char		*target;	/* request-target */
	size_t			 target_len;
	int			 status;	/* response status */
	const char		*reason;	/* its reason phrase */
	size_t			 reason_len;
	int			 http_major;
	int			 http_minor;
	struct http_header	 headers[HTTP_HEADERS_LIMIT];
	size_t			 nheaders;
	int			 keep_alive;
	int			 upgrade;	/* Upgrade (or CONNECT) */
	int			 chunked;
	int			 te_not_chunked;	/* Transfer-Encoding
							   not ending in
							   chunked */
	int64_t			 content_length;	/* -1: none */
	size_t			 len;		/* bytes of the head */
};

enum http_result {
	HTTP_MORE = 0,		/* head not complete yet */
	HTTP_OK,
	HTTP_ERROR,		/* malformed: answer 400 (or 431/414) */
};

/*
 * Finds the end of a head ("\r\n\r\n") in the first `len` bytes of buf.
 * Returns its length including the blank line, or 0 when not there yet.
 */
size_t	 http_head_end(const char *buf, size_t len);

/*
 * Parses the complete request head buf[0..len) (len from http_head_end())
 * strictly with llhttp.  Returns HTTP_OK and fills h, or HTTP_ERROR with
 * *status (400, 414, 431) and *why set to a static description.
 */
enum http_result http_head_parse(const char *buf, size_t len,
		    size_t headers_max, size_t uri_max, struct http_head *h,
		    int *status, const char **why);

/* The same for a response head (status line instead of request line). */
enum http_result http_response_head_parse(const char *buf, size_t len,
		    size_t headers_max, struct http_head *h, const char **why);

/*
 * Appends the head to forward: for a request "METHOD PATH HTTP/1.1" (path
 * given; one that starts with '?' gets a '/' before it), for a response
 * the status line as received; then every header but the hop-by-hop ones
 * (Connection, Keep-Alive, TE, Trailer, Upgrade, those the Connection
 * header names) and every Proxy-* header; then our own Connection header:
 * "upgrade" (keeping Upgrade) when `upgrade`, "close" when `close`, else
 * "keep-alive"; and "Host: add_host" when that is not NULL (an HTTP/1.0
 * request that had none).  Transfer-Encoding, Content-Length and Host
 * stay even when Connection names them: the body is forwarded as
 * received, to the host it was decided for.
 */
void	 http_forward_head(const struct http_head *h, const char *path,
	    size_t pathlen, int upgrade, int close, const char *add_host,
	    struct evbuffer *out);

/*
 * http_forward_head() for a head rewritten on the way: a header for which
 * skip(arg, header) says 1 is left out as well (skip NULL: none), and
 * extra (NULL: none) holds header lines of the caller's own ("Name:
 * value\r\n" each), written after the headers kept.
 */
void	 http_forward_head_ex(const struct http_head *h, const char *path,
	    size_t pathlen, int upgrade, int close,
	    int (*skip)(void *, const struct http_header *), void *arg,
	    const char *extra, struct evbuffer *out);

/* Whether buf starts like an HTTP request line ("GET ", "POST "). */
int	 http_looks_like_request(const char *buf, size_t len);

/* The first header called `name` (case-insensitive), or NULL. */
/* Whether header hd is called name (case-insensitive). */
int	 http_header_is(const struct http_header *hd, const char *name);

const struct http_header *http_header_find(const struct http_head *h,
		    const char *name);

/*
 * Whether the head's Host header names `want` (canonical form) and `port`:
 * exactly one Host header, its host brought to its canonical form equal to
 * `want`, its port (`port` when it names none) equal to `port`.
 */
int	 http_host_matches(const struct http_head *h,
	    const struct rules_host *want, uint16_t port);

/*
 * Splits an absolute-form target "http://AUTHORITY/PATH" into the authority
 * and the path ("/" when empty; "?q" for "http://AUTHORITY?q", which
 * http_forward_head() writes "/?q").  Returns 0, or -1 with *why.
 * Userinfo ("user@host"), other schemes and fragments are refused.
 */
int	 http_target_split(const char *t, size_t len, const char **auth,
	    size_t *authlen, const char **path, size_t *pathlen,
	    const char **why);

/*
 * Appends the proxy's own answer: status line, `X-Intutic-Error: reason`
 * when reason is not NULL, Content-Type text/plain, Content-Length,
 * Connection: close, and the body.
 */
void	 http_answer(struct evbuffer *out, int status, const char *reason,
	    const char *body);

/* The reason phrase of a status code ("Forbidden"). */
const char	*http_status_text(int status);

/*
 * Streaming framing: a parser that follows one message after its head and
 * says where it ends, so the proxy forwards exactly the body it parsed and
 * knows where the next message starts.
 */
struct http_framing;

/*
 * Starts framing a message from its head: the `headlen` bytes of `head` as
 * received (a request when `response` is 0), already accepted by
 * http_head_parse() or http_response_head_parse().  For a response,
 * `request_was_head` and the status decide whether a body follows (HEAD,
 * 1xx, 204, 304 have none).  Returns NULL with *why on failure.
 */
struct http_framing	*http_framing_new(int response, const char *head,
			    size_t headlen, int request_was_head,
			    const char **why);
/* Frees f; NULL does nothing. */
void			 http_framing_free(struct http_framing *f);

/*
 * Moves the body of the message from `in` to `out`, as much of it as `in`
 * holds, and says whether the message ended.
 *
 * - Content-Length and close-delimited bodies are moved as received
 *   (their bytes are the body, exact by construction).
 * - A chunked body is re-framed: each chunk's data is moved as received,
 *   and around it the proxy writes its own framing: the chunk size in
 *   lowercase hex without leading zeros, CRLF, the data, CRLF; at the end
 *   "0\r\n\r\n".  Chunk boundaries are kept; chunk extensions and trailer
 *   fields are dropped (the Trailer header is never forwarded either,
 *   http_forward_head()), so nothing an origin could frame differently
 *   is passed through.
 *
 * Refused with -1 and *why (a static string): what strict llhttp refuses
 * (a chunk-size that is not hex or overflows 64 bits, white space or
 * anything else around it, bad characters in a chunk extension, anything
 * but CRLF after a chunk's data or a chunk-size line), a bare CR, a bare
 * LF or obs-fold in the trailer section, a chunk-size line longer than
 * HTTP_CHUNK_LINE_MAX, a trailer section longer than HTTP_TRAILERS_MAX;
 * and running out of memory.  Nothing of the contiguous piece of `in` that
 * held the error is taken; after -1 the framing can only be freed.
 *
 * Takes from `in` only bytes of this message: what follows it (a
 * pipelined request) stays there.  Sets *in_used to the number of bytes
 * taken from `in` by this call (also on -1), *done to 1 when the message
 * ended (then later calls take nothing), else 0.  Data is moved without a
 * copy where libevent can hand over whole chains
 * (evbuffer_remove_buffer()); only the framing lines are written.
 */
int	 http_framing_move(struct http_framing *f, struct evbuffer *in,
	    struct evbuffer *out, uint64_t *in_used, int *done,
	    const char **why);

/*
 * fn(arg, data, len) sees each piece of the body's data (de-chunked, no
 * framing) as http_framing_move() moves it, before it goes; fn NULL: no
 * longer.  It must not touch the buffers being moved.
 */
void	 http_framing_tap(struct http_framing *f,
	    void (*fn)(void *, const char *, size_t), void *arg);

/* The message is complete (a bodiless message is, right after its head). */
int	 http_framing_done(const struct http_framing *f);

/* The body runs to the end of the connection (no length, no chunks). */
int	 http_framing_until_eof(const struct http_framing *f);

/*
 * Whether the llhttp linked in is strict: it refuses a chunk's data
 * followed by "X\n", "XY", a bare LF or a bare CR instead of CRLF, and
 * takes the same body with CRLF.  The proxy must not run with a lenient
 * one (a system library swapped after configure tested it).
 */
int	 http_parser_strict(void);

#endif /* INTUTIC_HTTP_H */
