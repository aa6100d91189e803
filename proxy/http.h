/*
 * http.h — HTTP/1.1 for the proxy: request heads, message framing and the
 * proxy's own answers.  http.c is the one file that uses llhttp, always
 * strict (no lenient flag is ever set).
 */
#ifndef INTUTIC_HTTP_H
#define INTUTIC_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct rules_host;

#define HTTP_METHOD_MAX		24	/* bytes of a method token */
#define HTTP_HEADERS_LIMIT	256	/* hard cap on the header table */

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

/* Whether buf starts like an HTTP request line ("GET ", "POST "). */
int	 http_looks_like_request(const char *buf, size_t len);

/* The first header called `name` (case-insensitive), or NULL. */
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
 * says where it ends, so the proxy can forward the raw bytes of a body it
 * does not decode (Content-Length, chunked, close-delimited) and know when
 * the next message starts.
 */
struct http_framing;

/*
 * Starts framing a message from its head: the `headlen` bytes of `head` as
 * received (a request when `response` is 0).  For a response,
 * `request_was_head` and the status decide whether a body follows (HEAD,
 * 1xx, 204, 304 have none).  Returns NULL with *why on failure.
 */
struct http_framing	*http_framing_new(int response, const char *head,
			    size_t headlen, int request_was_head,
			    const char **why);
void			 http_framing_free(struct http_framing *f);

/*
 * Feeds body bytes.  Sets *used to how many of them belong to this message
 * and *done when the message ended there.  Returns 0, or -1 for a malformed
 * body (bad chunk size, ...) with *why.
 */
int	 http_framing_feed(struct http_framing *f, const char *buf, size_t len,
	    size_t *used, int *done, const char **why);

/* The message is complete (a bodiless message is, right after its head). */
int	 http_framing_done(const struct http_framing *f);

/* The body runs to the end of the connection (no length, no chunks). */
int	 http_framing_until_eof(const struct http_framing *f);

#endif /* INTUTIC_HTTP_H */
