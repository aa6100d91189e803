/*
 * test-usage.c — the provider gateway's usage reader: request and
 * response bodies of the three APIs, shaped as the providers document
 * them, JSON and event streams, whole and cut, well and badly formed.
 *
 * Every body is read three ways, whole, a byte at a time and in pieces of
 * random sizes (several fixed seeds), and must read the same each way.
 * Each piece is a copy of exactly its bytes, so a read past the end of
 * one is caught by ASan (the build's sanitizers) or valgrind.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usage.h"
#include "tap.h"

#define NO		(-1)	/* a count not given */
#define SEEDS		8	/* random splits of each body */
#define PIECE_MAX	64	/* bytes of a random piece, at most */
#define DEEP_MAX	4096	/* bytes of the deep bodies built here */

/* What a response must read as. */
struct want {
	const char	*model;
	const char	*id;
	const char	*stop;
	const char	*error;
	int64_t		 input;
	int64_t		 output;
	int64_t		 cache_read;
	int64_t		 cache_write;
	int64_t		 reasoning;
	enum usage_state state;
	int		 malformed;
	unsigned int	 events;
};

enum { WHOLE, BYTES, RANDOM };

static uint32_t	 rnd_next(uint32_t *);
static size_t	 piece_len(int, uint32_t *, size_t);
static void	 feed_copy(struct usage *, const char *, size_t);
static void	 read_body(enum usage_api, int, const char *, size_t, int,
		    int, uint32_t, struct usage_result *);
static int	 result_eq(const struct usage_result *,
		    const struct usage_result *);
static int	 result_is(const struct usage_result *, const struct want *);
static void	 expect_len(const char *, enum usage_api, int, const char *,
		    size_t, int, const struct want *);
static void	 expect(const char *, enum usage_api, int, const char *, int,
		    const struct want *);
static void	 expect_req(const char *, const char *, const char *, int);
static char	*cr_only(const char *, int);
static void	 test_api_of_path(void);
static void	 test_request(void);
static void	 test_anthropic(void);
static void	 test_anthropic_stream(void);
static void	 test_chat(void);
static void	 test_chat_stream(void);
static void	 test_responses(void);
static void	 test_responses_stream(void);
static void	 test_errors(void);
static void	 test_strings(void);
static void	 test_numbers(void);
static void	 test_nesting(void);
static void	 test_malformed_json(void);
static void	 test_sse_syntax(void);
static void	 test_malformed_sse(void);
static void	 test_unknown_api(void);

/* ------------------------------------------------------------ fixtures */

static const char anthropic_message[] =
    "{\n"
    "  \"id\": \"msg_01XFDUDYJgAACzvnptvVoYEL\",\n"
    "  \"type\": \"message\",\n"
    "  \"role\": \"assistant\",\n"
    "  \"content\": [\n"
    "    {\"type\": \"text\", \"text\": \"Hello! \\\"usage\\\" is a word.\"},\n"
    "    {\"type\": \"tool_use\", \"id\": \"toolu_01A09q90qw90lq917835lq9\","
    " \"name\": \"get_weather\", \"input\": {\"location\": \"Paris\","
    " \"usage\": {\"input_tokens\": 999}, \"model\": \"not-this\"}}\n"
    "  ],\n"
    "  \"model\": \"claude-sonnet-4-20250514\",\n"
    "  \"stop_reason\": \"tool_use\",\n"
    "  \"stop_sequence\": null,\n"
    "  \"usage\": {\n"
    "    \"input_tokens\": 2095,\n"
    "    \"cache_creation_input_tokens\": 1024,\n"
    "    \"cache_read_input_tokens\": 512,\n"
    "    \"cache_creation\": {\"ephemeral_5m_input_tokens\": 1024,"
    " \"ephemeral_1h_input_tokens\": 0},\n"
    "    \"output_tokens\": 503,\n"
    "    \"service_tier\": \"standard\"\n"
    "  }\n"
    "}\n";

#define ANT_START \
    "event: message_start\n" \
    "data: {\"type\":\"message_start\",\"message\":{\"id\":" \
    "\"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY\",\"type\":\"message\"," \
    "\"role\":\"assistant\",\"content\":[],\"model\":" \
    "\"claude-opus-4-1-20250805\",\"stop_reason\":null," \
    "\"stop_sequence\":null,\"usage\":{\"input_tokens\":472," \
    "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":2048," \
    "\"output_tokens\":2}}}\n" \
    "\n"
#define ANT_TEXT \
    "event: content_block_start\n" \
    "data: {\"type\":\"content_block_start\",\"index\":0," \
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n" \
    "\n" \
    "event: ping\n" \
    "data: {\"type\": \"ping\"}\n" \
    "\n" \
    "event: content_block_delta\n" \
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":" \
    "{\"type\":\"text_delta\",\"text\":\"Okay, let\\u2019s see\"}}\n" \
    "\n" \
    "event: content_block_delta\n" \
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":" \
    "{\"type\":\"text_delta\",\"text\":\" \\\"usage\\\": {}\\n\"}}\n" \
    "\n" \
    "event: content_block_stop\n" \
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n" \
    "\n"
#define ANT_DELTA_1 \
    "event: message_delta\n" \
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":" \
    "\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n" \
    "\n"
#define ANT_DELTA_2 \
    "event: message_delta\n" \
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":" \
    "\"end_turn\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":480," \
    "\"cache_creation_input_tokens\":16,\"cache_read_input_tokens\":2048," \
    "\"output_tokens\":89}}\n" \
    "\n"
#define ANT_STOP \
    "event: message_stop\n" \
    "data: {\"type\":\"message_stop\"}\n" \
    "\n"

static const char anthropic_stream[] =
    ANT_START ANT_TEXT ANT_DELTA_1 ANT_DELTA_2 ANT_STOP;

static const char chat_completion[] =
    "{\n"
    "  \"id\": \"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\n"
    "  \"object\": \"chat.completion\",\n"
    "  \"created\": 1741569952,\n"
    "  \"model\": \"gpt-4.1-2025-04-14\",\n"
    "  \"choices\": [\n"
    "    {\n"
    "      \"index\": 0,\n"
    "      \"message\": {\"role\": \"assistant\", \"content\": "
    "\"Hello! How can I assist you today?\", \"refusal\": null, "
    "\"annotations\": []},\n"
    "      \"logprobs\": null,\n"
    "      \"finish_reason\": \"length\"\n"
    "    },\n"
    "    {\"index\": 1, \"message\": {\"role\": \"assistant\", "
    "\"content\": \"Hi\"}, \"logprobs\": null, \"finish_reason\": \"stop\"}\n"
    "  ],\n"
    "  \"usage\": {\n"
    "    \"prompt_tokens\": 19,\n"
    "    \"completion_tokens\": 10,\n"
    "    \"total_tokens\": 29,\n"
    "    \"prompt_tokens_details\": {\"cached_tokens\": 3, "
    "\"audio_tokens\": 0},\n"
    "    \"completion_tokens_details\": {\"reasoning_tokens\": 7, "
    "\"audio_tokens\": 0, \"accepted_prediction_tokens\": 0, "
    "\"rejected_prediction_tokens\": 0}\n"
    "  },\n"
    "  \"service_tier\": \"default\",\n"
    "  \"system_fingerprint\": null\n"
    "}\n";

/* stream: true, stream_options: {include_usage: true} */
#define CHAT_CHUNK(choices, usage) \
    "data: {\"id\":\"chatcmpl-123\",\"object\":\"chat.completion.chunk\"," \
    "\"created\":1694268190,\"model\":\"gpt-4o-mini-2024-07-18\"," \
    "\"system_fingerprint\":\"fp_44709d6fcb\",\"choices\":[" choices "]," \
    "\"usage\":" usage "}\n\n"
#define CHAT_HEAD \
    CHAT_CHUNK("{\"index\":0,\"delta\":{\"role\":\"assistant\"," \
	"\"content\":\"\",\"refusal\":null},\"logprobs\":null," \
	"\"finish_reason\":null}", "null") \
    CHAT_CHUNK("{\"index\":0,\"delta\":{\"content\":\"Hello\"}," \
	"\"logprobs\":null,\"finish_reason\":null}", "null")
#define CHAT_FINISH \
    CHAT_CHUNK("{\"index\":0,\"delta\":{},\"logprobs\":null," \
	"\"finish_reason\":\"stop\"}", "null") \
    CHAT_CHUNK("{\"index\":0,\"delta\":{},\"logprobs\":null," \
	"\"finish_reason\":\"length\"}", "null")
#define CHAT_USAGE \
    CHAT_CHUNK("", "{\"prompt_tokens\":9,\"completion_tokens\":12," \
	"\"total_tokens\":21,\"prompt_tokens_details\":{\"cached_tokens\":0," \
	"\"audio_tokens\":0},\"completion_tokens_details\":" \
	"{\"reasoning_tokens\":4,\"audio_tokens\":0," \
	"\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}}")
#define CHAT_DONE "data: [DONE]\n\n"

static const char chat_stream[] = CHAT_HEAD CHAT_FINISH CHAT_USAGE CHAT_DONE;

#define RESP_OBJECT(status, details, usage) \
    "{\"id\":\"resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b\"," \
    "\"object\":\"response\",\"created_at\":1741476542,\"status\":\"" \
    status "\",\"error\":null,\"incomplete_details\":" details "," \
    "\"instructions\":null,\"max_output_tokens\":null,\"model\":" \
    "\"gpt-4.1-2025-04-14\",\"output\":[{\"type\":\"message\",\"id\":" \
    "\"msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b\",\"status\":" \
    "\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":" \
    "\"output_text\",\"text\":\"In a peaceful grove beneath a silver moon" \
    "...\",\"annotations\":[]}]}],\"parallel_tool_calls\":true," \
    "\"previous_response_id\":null,\"reasoning\":{\"effort\":null," \
    "\"summary\":null},\"store\":true,\"temperature\":1.0,\"text\":" \
    "{\"format\":{\"type\":\"text\"}},\"tool_choice\":\"auto\",\"tools\":[]," \
    "\"top_p\":1.0,\"truncation\":\"disabled\",\"usage\":" usage "," \
    "\"user\":null,\"metadata\":{}}"
#define RESP_USAGE \
    "{\"input_tokens\":36,\"input_tokens_details\":{\"cached_tokens\":8}," \
    "\"output_tokens\":87,\"output_tokens_details\":" \
    "{\"reasoning_tokens\":64},\"total_tokens\":123}"

static const char responses_object[] =
    RESP_OBJECT("completed", "null", RESP_USAGE) "\n";

#define RESP_EVENT(type, seq, rest) \
    "event: " type "\n" \
    "data: {\"type\":\"" type "\",\"sequence_number\":" seq "," rest "}\n\n"
#define RESP_HEAD \
    RESP_EVENT("response.created", "0", "\"response\":" \
	RESP_OBJECT("in_progress", "null", "null")) \
    RESP_EVENT("response.in_progress", "1", "\"response\":" \
	RESP_OBJECT("in_progress", "null", "null")) \
    RESP_EVENT("response.output_item.added", "2", "\"output_index\":0," \
	"\"item\":{\"id\":\"msg_67c9fdcf37fc8190ba82116e33fb28c5\"," \
	"\"type\":\"message\",\"status\":\"in_progress\",\"role\":" \
	"\"assistant\",\"content\":[]}") \
    RESP_EVENT("response.content_part.added", "3", "\"item_id\":" \
	"\"msg_67c9fdcf37fc8190ba82116e33fb28c5\",\"output_index\":0," \
	"\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":" \
	"\"\",\"annotations\":[]}") \
    RESP_EVENT("response.output_text.delta", "4", "\"item_id\":" \
	"\"msg_67c9fdcf37fc8190ba82116e33fb28c5\",\"output_index\":0," \
	"\"content_index\":0,\"delta\":\"Hi\"") \
    RESP_EVENT("response.output_text.done", "5", "\"item_id\":" \
	"\"msg_67c9fdcf37fc8190ba82116e33fb28c5\",\"output_index\":0," \
	"\"content_index\":0,\"text\":\"Hi there!\"")

static const char responses_stream[] = RESP_HEAD
    RESP_EVENT("response.completed", "6", "\"response\":"
	RESP_OBJECT("completed", "null", RESP_USAGE));

/* ------------------------------------------------------------- helpers */

static uint32_t
rnd_next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static size_t
piece_len(int how, uint32_t *seed, size_t left)
{
	size_t	 n;

	switch (how) {
	case WHOLE:
		return left;
	case BYTES:
		return 1;
	default:
		n = 1 + rnd_next(seed) % PIECE_MAX;
		return n < left ? n : left;
	}
}

/* Feeds a copy of exactly b[0..n), so that ASan sees a read past it. */
static void
feed_copy(struct usage *u, const char *b, size_t n)
{
	char	*copy;

	if ((copy = malloc(n == 0 ? 1 : n)) == NULL)
		abort();
	memcpy(copy, b, n);
	usage_feed(u, copy, n);
	free(copy);
}

static void
read_body(enum usage_api api, int sse, const char *body, size_t len,
    int complete, int how, uint32_t seed, struct usage_result *out)
{
	struct usage	 u;
	size_t		 off = 0, n;

	usage_begin(&u, api, sse);
	while (off < len) {
		n = piece_len(how, &seed, len - off);
		feed_copy(&u, body + off, n);
		off += n;
	}
	usage_feed(&u, NULL, 0);
	usage_end(&u, complete, out);
}

static int
result_eq(const struct usage_result *a, const struct usage_result *b)
{
	return strcmp(a->model, b->model) == 0 && strcmp(a->id, b->id) == 0 &&
	    strcmp(a->stop, b->stop) == 0 &&
	    strcmp(a->error, b->error) == 0 && a->input == b->input &&
	    a->output == b->output && a->cache_read == b->cache_read &&
	    a->cache_write == b->cache_write && a->reasoning == b->reasoning &&
	    a->state == b->state && a->malformed == b->malformed &&
	    a->events == b->events;
}

/* r is w; each field that is not is a diagnostic. */
static int
result_is(const struct usage_result *r, const struct want *w)
{
	int	 ok = 1;

#define STR(f) do {							\
	if (strcmp(r->f, w->f) != 0) {					\
		tap_diag(#f ": got '%s', want '%s'", r->f, w->f);	\
		ok = 0;							\
	}								\
} while (0)
#define NUM(f) do {							\
	if ((long long)r->f != (long long)w->f) {			\
		tap_diag(#f ": got %lld, want %lld", (long long)r->f,	\
		    (long long)w->f);					\
		ok = 0;							\
	}								\
} while (0)
	STR(model);
	STR(id);
	STR(stop);
	STR(error);
	NUM(input);
	NUM(output);
	NUM(cache_read);
	NUM(cache_write);
	NUM(reasoning);
	NUM(state);
	NUM(malformed);
	NUM(events);
#undef STR
#undef NUM
	return ok;
}

/*
 * Two points: body[0..len) reads the same whole, a byte at a time and in
 * random pieces; and it reads as w.
 */
static void
expect_len(const char *what, enum usage_api api, int sse, const char *body,
    size_t len, int complete, const struct want *w)
{
	struct usage_result	 whole, other;
	int			 same = 1, i;

	read_body(api, sse, body, len, complete, WHOLE, 0, &whole);
	read_body(api, sse, body, len, complete, BYTES, 0, &other);
	if (!result_eq(&whole, &other)) {
		tap_diag("a byte at a time reads otherwise");
		same = 0;
	}
	for (i = 0; i < SEEDS; i++) {
		read_body(api, sse, body, len, complete, RANDOM,
		    0x9e3779b9u * (uint32_t)(i + 1), &other);
		if (!result_eq(&whole, &other)) {
			tap_diag("random pieces (seed %d) read otherwise", i);
			same = 0;
		}
	}
	tap_ok(same, "%s: whole, byte-wise and in pieces alike", what);
	tap_ok(result_is(&whole, w), "%s", what);
}

static void
expect(const char *what, enum usage_api api, int sse, const char *body,
    int complete, const struct want *w)
{
	expect_len(what, api, sse, body, strlen(body), complete, w);
}

/* A request body: its model and stream flag, read whole and byte-wise. */
static void
expect_req(const char *what, const char *body, const char *model,
    int stream)
{
	struct usage_req	 r, b;
	size_t			 i, len = strlen(body);
	char			*copy;

	if ((copy = malloc(len == 0 ? 1 : len)) == NULL)
		abort();
	memcpy(copy, body, len);
	usage_req_begin(&r);
	usage_req_feed(&r, copy, len);
	usage_req_begin(&b);
	for (i = 0; i < len; i++)
		usage_req_feed(&b, copy + i, 1);
	free(copy);
	tap_ok(strcmp(usage_req_model(&r), usage_req_model(&b)) == 0 &&
	    usage_req_stream(&r) == usage_req_stream(&b),
	    "request %s: whole and byte-wise alike", what);
	tap_ok(strcmp(usage_req_model(&r), model) == 0 &&
	    usage_req_stream(&r) == stream, "request %s: model '%s' "
	    "stream %d", what, model, stream);
	if (strcmp(usage_req_model(&r), model) != 0 ||
	    usage_req_stream(&r) != stream)
		tap_diag("got model '%s' stream %d", usage_req_model(&r),
		    usage_req_stream(&r));
}

/* s with its LFs made CRs (crlf 0) or CRLFs (crlf 1); to be freed. */
static char *
cr_only(const char *s, int crlf)
{
	size_t	 n = strlen(s), i, o = 0;
	char	*d;

	if ((d = malloc(2 * n + 1)) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		if (s[i] != '\n') {
			d[o++] = s[i];
			continue;
		}
		d[o++] = '\r';
		if (crlf)
			d[o++] = '\n';
	}
	d[o] = '\0';
	return d;
}

/* --------------------------------------------------------------- tests */

static void
test_api_of_path(void)
{
	static const struct {
		const char	*path;
		enum usage_api	 api;
	} cases[] = {
		{ "/v1/messages", USAGE_API_ANTHROPIC },
		{ "/v1/messages?beta=true", USAGE_API_ANTHROPIC },
		{ "/anthropic/v1/messages", USAGE_API_ANTHROPIC },
		{ "/v1/messages/count_tokens", USAGE_API_NONE },
		{ "/v1/messages/", USAGE_API_NONE },
		{ "/v1/messages/batches", USAGE_API_NONE },
		{ "/v2/messages", USAGE_API_NONE },
		{ "/V1/MESSAGES", USAGE_API_NONE },
		{ "/v1/chat/completions", USAGE_API_CHAT },
		{ "/openai/deployments/x/chat/completions?api-version=1",
		    USAGE_API_CHAT },
		{ "/v1/completions", USAGE_API_NONE },
		{ "/v1/responses", USAGE_API_RESPONSES },
		{ "/v1/responses?x=/v1/messages", USAGE_API_RESPONSES },
		{ "/v1/responses/resp_123", USAGE_API_NONE },
		{ "/v1/responses/resp_123/input_items", USAGE_API_NONE },
		{ "/v1/messages?/responses", USAGE_API_ANTHROPIC },
		{ "/", USAGE_API_NONE },
		{ "", USAGE_API_NONE },
	};
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tap_is_int(usage_api_of_path(cases[i].path,
		    strlen(cases[i].path)), cases[i].api, "api of '%s'",
		    cases[i].path);
	/* The length given, not the NUL: a longer buffer is not read. */
	tap_is_int(usage_api_of_path("/v1/messagesXXXX", 12),
	    USAGE_API_ANTHROPIC, "api of the first 12 bytes");
	tap_is_int(usage_api_of_path(NULL, 0), USAGE_API_NONE, "api of NULL");
}

static void
test_request(void)
{
	expect_req("anthropic",
	    "{\"model\": \"claude-sonnet-4-20250514\", \"max_tokens\": 1024,\n"
	    " \"stream\": true, \"messages\": [{\"role\": \"user\", "
	    "\"content\": \"Hello, world\", \"model\": \"no\"}],\n"
	    " \"metadata\": {\"stream\": false}}",
	    "claude-sonnet-4-20250514", 1);
	expect_req("chat",
	    "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"developer\","
	    "\"content\":\"You are a helpful assistant.\"}],\"stream\":false,"
	    "\"stream_options\":{\"include_usage\":true}}", "gpt-4o-mini", 0);
	expect_req("responses without stream",
	    "{\"model\": \"gpt-4.1\", \"input\": \"Tell me a story.\"}",
	    "gpt-4.1", -1);
	expect_req("stream not a boolean",
	    "{\"model\": \"m\", \"stream\": \"true\"}", "m", -1);
	expect_req("model not a string", "{\"model\": 4, \"stream\": true}",
	    "", 1);
	expect_req("escaped key and value",
	    "{\"mod\\u0065l\": \"gpt-\\u00e9\\/x\", \"str\\u0065am\": true}",
	    "gpt-\xc3\xa9/x", 1);
	expect_req("the last model wins",
	    "{\"model\": \"a\", \"model\": \"b\"}", "b", -1);
	expect_req("an array at the top", "[{\"model\": \"a\"}]", "", -1);
	expect_req("malformed after the model",
	    "{\"model\": \"kept\", \"stream\": tru, \"x\": 1}", "kept", -1);
	expect_req("cut", "{\"stream\": true, \"model\": \"cut-sh", "", 1);
	expect_req("empty", "", "", -1);
}

static void
test_anthropic(void)
{
	static const struct want w = { "claude-sonnet-4-20250514",
	    "msg_01XFDUDYJgAACzvnptvVoYEL", "tool_use", "", 2095, 503, 512,
	    1024, NO, USAGE_FINAL, 0, 0 };
	static const struct want cut = { "claude-sonnet-4-20250514",
	    "msg_01XFDUDYJgAACzvnptvVoYEL", "tool_use", "", 2095, NO, NO,
	    1024, NO, USAGE_PARTIAL, 0, 0 };
	static const struct want cut_early = { "",
	    "msg_01XFDUDYJgAACzvnptvVoYEL", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 0 };
	const char	*p;

	expect("anthropic message", USAGE_API_ANTHROPIC, 0,
	    anthropic_message, 1, &w);
	/* Cut inside usage, after cache_creation_input_tokens. */
	p = strstr(anthropic_message, "\"cache_read_input_tokens\"");
	expect_len("anthropic message cut in its usage", USAGE_API_ANTHROPIC,
	    0, anthropic_message, (size_t)(p - anthropic_message), 0, &cut);
	p = strstr(anthropic_message, "\"type\"");
	expect_len("anthropic message cut early", USAGE_API_ANTHROPIC, 0,
	    anthropic_message, (size_t)(p - anthropic_message), 0,
	    &cut_early);
	/* Complete by its framing but not its JSON: malformed. */
	{
		struct want	 m = cut;

		m.malformed = 1;
		p = strstr(anthropic_message, "\"cache_read_input_tokens\"");
		expect_len("anthropic message ending early, framing complete",
		    USAGE_API_ANTHROPIC, 0, anthropic_message,
		    (size_t)(p - anthropic_message), 1, &m);
	}
}

static void
test_anthropic_stream(void)
{
	static const struct want w = { "claude-opus-4-1-20250805",
	    "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "end_turn", "", 480, 89,
	    2048, 16, NO, USAGE_FINAL, 0, 9 };
	static const struct want one = { "claude-opus-4-1-20250805",
	    "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "tool_use", "", 472, 15,
	    2048, 0, NO, USAGE_FINAL, 0, 8 };
	static const struct want cut = { "claude-opus-4-1-20250805",
	    "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "", "", 472, 2,
	    2048, 0, NO, USAGE_PARTIAL, 0, 6 };
	static const struct want cut_delta = { "claude-opus-4-1-20250805",
	    "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "tool_use", "", 472, 15,
	    2048, 0, NO, USAGE_PARTIAL, 0, 7 };
	static const struct want no_stop = { "claude-opus-4-1-20250805",
	    "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "end_turn", "", 480, 89,
	    2048, 16, NO, USAGE_PARTIAL, 0, 8 };
	static const struct want err = { "claude-opus-4-1-20250805",
	    "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "", "overloaded_error",
	    472, 2, 2048, 0, NO, USAGE_PARTIAL, 0, 7 };
	static const char with_error[] = ANT_START ANT_TEXT
	    "event: error\n"
	    "data: {\"type\": \"error\", \"error\": {\"type\": "
	    "\"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
	static const char one_delta[] = ANT_START ANT_TEXT ANT_DELTA_1
	    ANT_STOP;
	static const char no_message_stop[] = ANT_START ANT_TEXT ANT_DELTA_1
	    ANT_DELTA_2;
	char		*s;
	size_t		 n;
	struct want	 half;

	expect("anthropic stream", USAGE_API_ANTHROPIC, 1, anthropic_stream,
	    1, &w);
	expect("anthropic stream, one message_delta", USAGE_API_ANTHROPIC, 1,
	    one_delta, 1, &one);
	expect("anthropic stream cut after the content", USAGE_API_ANTHROPIC,
	    1, ANT_START ANT_TEXT, 0, &cut);
	/* Cut inside the second message_delta: the first one's counts. */
	n = strlen(ANT_START ANT_TEXT ANT_DELTA_1) + 60;
	expect_len("anthropic stream cut inside a message_delta",
	    USAGE_API_ANTHROPIC, 1, anthropic_stream, n, 0, &cut_delta);
	/* Cut before the blank line of the last message_delta. */
	n = strlen(ANT_START ANT_TEXT ANT_DELTA_1 ANT_DELTA_2) - 1;
	expect_len("anthropic stream cut before a blank line",
	    USAGE_API_ANTHROPIC, 1, anthropic_stream, n, 1, &cut_delta);
	expect("anthropic stream without message_stop", USAGE_API_ANTHROPIC,
	    1, no_message_stop, 1, &no_stop);
	expect("anthropic stream with an error event", USAGE_API_ANTHROPIC, 1,
	    with_error, 1, &err);

	s = cr_only(anthropic_stream, 0);
	expect("anthropic stream, CR line ends", USAGE_API_ANTHROPIC, 1, s, 1,
	    &w);
	free(s);
	s = cr_only(anthropic_stream, 1);
	expect("anthropic stream, CRLF line ends", USAGE_API_ANTHROPIC, 1, s,
	    1, &w);
	/* A CRLF split between two pieces is still one line end. */
	n = strlen(s);
	half = w;
	expect_len("anthropic stream, CRLF, all but the last LF",
	    USAGE_API_ANTHROPIC, 1, s, n - 1, 1, &half);
	free(s);
}

static void
test_chat(void)
{
	static const struct want w = { "gpt-4.1-2025-04-14",
	    "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "length", "", 19, 10, 3,
	    NO, 7, USAGE_FINAL, 0, 0 };

	expect("chat completion", USAGE_API_CHAT, 0, chat_completion, 1, &w);
}

static void
test_chat_stream(void)
{
	static const struct want w = { "gpt-4o-mini-2024-07-18",
	    "chatcmpl-123", "stop", "", 9, 12, 0, NO, 4, USAGE_FINAL, 0, 6 };
	static const struct want no_done = { "gpt-4o-mini-2024-07-18",
	    "chatcmpl-123", "stop", "", 9, 12, 0, NO, 4, USAGE_FINAL, 0, 5 };
	static const struct want no_usage = { "gpt-4o-mini-2024-07-18",
	    "chatcmpl-123", "stop", "", NO, NO, NO, NO, NO, USAGE_NONE, 0, 5 };
	static const struct want cut = { "gpt-4o-mini-2024-07-18",
	    "chatcmpl-123", "", "", NO, NO, NO, NO, NO, USAGE_NONE, 0, 2 };
	static const struct want err = { "gpt-4o-mini-2024-07-18",
	    "chatcmpl-123", "", "server_error", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 3 };
	char	*s;

	expect("chat stream", USAGE_API_CHAT, 1, chat_stream, 1, &w);
	expect("chat stream without [DONE]", USAGE_API_CHAT, 1,
	    CHAT_HEAD CHAT_FINISH CHAT_USAGE, 0, &no_done);
	expect("chat stream without include_usage", USAGE_API_CHAT, 1,
	    CHAT_HEAD CHAT_FINISH CHAT_DONE, 1, &no_usage);
	expect("chat stream cut", USAGE_API_CHAT, 1, CHAT_HEAD "data: {\"id\"",
	    0, &cut);
	expect("chat stream with an error", USAGE_API_CHAT, 1, CHAT_HEAD
	    "data: {\"error\":{\"message\":\"The server had an error\","
	    "\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n",
	    0, &err);
	s = cr_only(chat_stream, 0);
	expect("chat stream, CR line ends", USAGE_API_CHAT, 1, s, 1, &w);
	free(s);
}

static void
test_responses(void)
{
	static const struct want w = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "completed", "", 36, 87, 8, NO, 64, USAGE_FINAL, 0, 0 };
	static const struct want inc = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "max_output_tokens", "", 36, 87, 8, NO, 64, USAGE_FINAL, 0, 0 };

	expect("responses object", USAGE_API_RESPONSES, 0, responses_object,
	    1, &w);
	expect("responses object, incomplete", USAGE_API_RESPONSES, 0,
	    RESP_OBJECT("incomplete", "{\"reason\":\"max_output_tokens\"}",
	    RESP_USAGE), 1, &inc);
}

static void
test_responses_stream(void)
{
	static const struct want w = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "completed", "", 36, 87, 8, NO, 64, USAGE_FINAL, 0, 7 };
	static const struct want cut = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "", "", NO, NO, NO, NO, NO, USAGE_NONE, 0, 6 };
	static const struct want inc = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "max_output_tokens", "", 36, 87, 8, NO, 64, USAGE_FINAL, 0, 7 };
	static const struct want failed = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "failed", "server_error", NO, NO, NO, NO, NO, USAGE_NONE, 0, 7 };
	static const struct want errev = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "", "ERR_SOMETHING", NO, NO, NO, NO, NO, USAGE_NONE, 0, 7 };
	/* Named only by the event: line (type after the response). */
	static const struct want named = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "completed", "", 36, 87, 8, NO, 64, USAGE_FINAL, 0, 1 };
	static const struct want usage_early = { "gpt-4.1-2025-04-14",
	    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
	    "", "", NO, NO, NO, NO, NO, USAGE_NONE, 0, 1 };

	expect("responses stream", USAGE_API_RESPONSES, 1, responses_stream,
	    1, &w);
	expect("responses stream cut", USAGE_API_RESPONSES, 1, RESP_HEAD, 0,
	    &cut);
	expect("responses stream, incomplete", USAGE_API_RESPONSES, 1,
	    RESP_HEAD RESP_EVENT("response.incomplete", "6", "\"response\":"
	    RESP_OBJECT("incomplete", "{\"reason\":\"max_output_tokens\"}",
	    RESP_USAGE)), 1, &inc);
	expect("responses stream, failed", USAGE_API_RESPONSES, 1,
	    RESP_HEAD RESP_EVENT("response.failed", "6", "\"response\":{"
	    "\"id\":\"resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b\","
	    "\"status\":\"failed\",\"error\":{\"code\":\"server_error\","
	    "\"message\":\"The model failed\"},\"usage\":null}"), 1, &failed);
	expect("responses stream, error event", USAGE_API_RESPONSES, 1,
	    RESP_HEAD RESP_EVENT("error", "6", "\"code\":\"ERR_SOMETHING\","
	    "\"message\":\"Something went wrong\",\"param\":null"), 1, &errev);
	expect("responses stream, type from the event line",
	    USAGE_API_RESPONSES, 1, "event: response.completed\ndata: "
	    "{\"response\":" RESP_OBJECT("completed", "null", RESP_USAGE)
	    ",\"type\":\"response.completed\"}\n\n", 1, &named);
	expect("responses stream, usage outside a final event",
	    USAGE_API_RESPONSES, 1, "event: response.in_progress\ndata: "
	    "{\"type\":\"response.in_progress\",\"response\":"
	    RESP_OBJECT("in_progress", "null", RESP_USAGE) "}\n\n", 1,
	    &usage_early);
}

static void
test_errors(void)
{
	static const struct want ant = { "", "", "", "invalid_request_error",
	    NO, NO, NO, NO, NO, USAGE_NONE, 0, 0 };
	static const struct want oai = { "", "", "", "invalid_request_error",
	    NO, NO, NO, NO, NO, USAGE_NONE, 0, 0 };
	static const struct want code = { "", "", "", "rate_limit_exceeded",
	    NO, NO, NO, NO, NO, USAGE_NONE, 0, 0 };
	static const struct want cut = { "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 0 };

	expect("anthropic error body", USAGE_API_ANTHROPIC, 0,
	    "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
	    "\"message\":\"max_tokens: Field required\"},\"request_id\":"
	    "\"req_011CSHoEeqs5C35K2UUqR7Fy\"}", 1, &ant);
	expect("openai error body", USAGE_API_CHAT, 0,
	    "{\n  \"error\": {\n    \"message\": \"Incorrect API key provided: "
	    "sk-abc. You can find your API key at https://platform.openai.com"
	    "/account/api-keys.\",\n    \"type\": \"invalid_request_error\",\n"
	    "    \"param\": null,\n    \"code\": \"invalid_api_key\"\n  }\n}\n",
	    1, &oai);
	expect("error body with a code only", USAGE_API_RESPONSES, 0,
	    "{\"error\":{\"message\":\"Rate limit reached\",\"type\":null,"
	    "\"code\":\"rate_limit_exceeded\"}}", 1, &code);
	expect("error type cut before its end", USAGE_API_CHAT, 0,
	    "{\"error\":{\"type\":\"invalid_req", 0, &cut);
}

static void
test_strings(void)
{
	static const struct want esc = { "claude-caf\xc3\xa9-\"x\"-\xf0\x9f\x98\x80"
	    "\\/\t", "", "", "", 1, 2, NO, NO, NO, USAGE_FINAL, 0, 0 };
	static const struct want lone = { "a\xef\xbf\xbd" "b\xef\xbf\xbd"
	    "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "d\xef\xbf\xbd", "", "", "", NO, NO, NO,
	    NO, NO, USAGE_NONE, 0, 0 };
	static const struct want raw = { "mod\xc3\xa8le-\xe6\xa8\xa1\xe5\x9e\x8b",
	    "", "", "", NO, NO, NO, NO, NO, USAGE_NONE, 0, 0 };
	struct want	 longw = { NULL, "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 0 };
	char		 body[1024], model[USAGE_MODEL_MAX + 8];
	char		 stop[USAGE_STOP_MAX + 8];
	int		 n;

	expect("escapes in the model", USAGE_API_ANTHROPIC, 0,
	    "{\"model\":\"claude-caf\\u00e9-\\\"x\\\"-\\ud83d\\ude00\\\\\\/\\t\","
	    "\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}", 1, &esc);
	expect("lone surrogates and \\u0000", USAGE_API_CHAT, 0,
	    "{\"model\":\"a\\ud83db\\ude00c\\ud83d\\ud83d\\u0000d\\ud800\"}",
	    1, &lone);
	expect("UTF-8 as it comes", USAGE_API_CHAT, 0,
	    "{\"model\":\"mod\xc3\xa8le-\xe6\xa8\xa1\xe5\x9e\x8b\"}", 1, &raw);

	/* 300 bytes: the first 127. */
	memset(model, 'm', USAGE_MODEL_MAX - 1);
	model[USAGE_MODEL_MAX - 1] = '\0';
	n = snprintf(body, sizeof(body), "{\"model\":\"%s%0173d\"}", model, 0);
	if (n < 0 || (size_t)n >= sizeof(body))
		abort();
	longw.model = model;
	expect("a long model is cut", USAGE_API_CHAT, 0, body, 1, &longw);

	/* 126 bytes and a two-byte character: cut before the character. */
	memset(model, 'm', USAGE_MODEL_MAX - 2);
	model[USAGE_MODEL_MAX - 2] = '\0';
	n = snprintf(body, sizeof(body), "{\"model\":\"%s\\u00e9tc\"}", model);
	if (n < 0 || (size_t)n >= sizeof(body))
		abort();
	expect("a long model is cut at a character", USAGE_API_CHAT, 0, body,
	    1, &longw);
	n = snprintf(body, sizeof(body), "{\"model\":\"%s\xc3\xa9tc\"}", model);
	if (n < 0 || (size_t)n >= sizeof(body))
		abort();
	expect("a long raw model is cut at a character", USAGE_API_CHAT, 0,
	    body, 1, &longw);

	/* A stop reason fits in 63 bytes: 61 and a three-byte character. */
	memset(stop, 's', USAGE_STOP_MAX - 3);
	stop[USAGE_STOP_MAX - 3] = '\0';
	n = snprintf(body, sizeof(body), "{\"stop_reason\":\"%s\\u20acx\"}",
	    stop);
	if (n < 0 || (size_t)n >= sizeof(body))
		abort();
	longw.model = "";
	longw.stop = stop;
	expect("a long stop reason is cut at a character",
	    USAGE_API_ANTHROPIC, 0, body, 1, &longw);
}

static void
test_numbers(void)
{
	static const struct want max = { "", "", "", "", INT64_MAX, NO, NO, NO,
	    NO, USAGE_PARTIAL, 0, 0 };
	static const struct want none = { "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 0 };
	static const struct want zero = { "", "", "", "", 0, 0, 0, 0, NO,
	    USAGE_FINAL, 0, 0 };

	/* Cut before the top-level object closes: partial. */
	expect("int64 max", USAGE_API_ANTHROPIC, 0,
	    "{\"usage\":{\"input_tokens\":9223372036854775807,"
	    "\"output_tokens\":9223372036854775808}", 0, &max);
	expect("past int64, fractions, exponents, negatives: absent",
	    USAGE_API_ANTHROPIC, 0,
	    "{\"usage\":{\"input_tokens\":18446744073709551616,"
	    "\"output_tokens\":12.0,\"cache_read_input_tokens\":1e3,"
	    "\"cache_creation_input_tokens\":-5}}", 1, &none);
	expect("strings, null, booleans: absent", USAGE_API_ANTHROPIC, 0,
	    "{\"usage\":{\"input_tokens\":\"12\","
	    "\"output_tokens\":null,\"cache_read_input_tokens\":true,"
	    "\"cache_creation_input_tokens\":[1]}}", 1, &none);
	expect("zeros", USAGE_API_ANTHROPIC, 0,
	    "{\"usage\":{\"input_tokens\":0,\"output_tokens\":-0,"
	    "\"cache_read_input_tokens\":0 ,\"cache_creation_input_tokens\":0}}",
	    1, &zero);
	expect("a number at the top", USAGE_API_CHAT, 0, "  -12.5e+3 ", 1,
	    &none);
	expect("a number at the top ending the body", USAGE_API_CHAT, 0, "42",
	    1, &none);
}

static void
test_nesting(void)
{
	static const struct want w = { "deep", "", "", "", 5, 6, NO, NO, NO,
	    USAGE_FINAL, 0, 0 };
	static const struct want bad = { "deep", "", "", "", NO, NO, NO, NO,
	    NO, USAGE_NONE, 1, 0 };
	char	 body[DEEP_MAX];
	size_t	 n = 0;
	int	 i;

	/* 300 levels, then the usage at the top. */
	n = (size_t)snprintf(body, sizeof(body), "{\"model\":\"deep\",\"x\":");
	for (i = 0; i < 300; i++) {
		if (i % 2)
			body[n++] = '[';
		else
			n += (size_t)snprintf(body + n, sizeof(body) - n,
			    "{\"usage\":");
	}
	for (i = 299; i >= 0; i--)
		body[n++] = i % 2 ? ']' : '}';
	n += (size_t)snprintf(body + n, sizeof(body) - n,
	    ",\"usage\":{\"input_tokens\":5,\"output_tokens\":6}}");
	expect_len("300 levels deep", USAGE_API_ANTHROPIC, 0, body, n, 1, &w);

	/* Past USAGE_JSON_NEST_MAX: malformed. */
	n = (size_t)snprintf(body, sizeof(body), "{\"model\":\"deep\",\"x\":");
	for (i = 0; i < USAGE_JSON_NEST_MAX; i++)
		body[n++] = '[';
	for (i = 0; i < USAGE_JSON_NEST_MAX; i++)
		body[n++] = ']';
	n += (size_t)snprintf(body + n, sizeof(body) - n,
	    ",\"usage\":{\"input_tokens\":5,\"output_tokens\":6}}");
	expect_len("deeper than USAGE_JSON_NEST_MAX", USAGE_API_ANTHROPIC, 0,
	    body, n, 1, &bad);

	/* Keys past USAGE_JSON_DEPTH are not followed, nor mistaken. */
	n = 0;
	for (i = 0; i < USAGE_JSON_DEPTH + 4; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n,
		    "{\"usage\":");
	n += (size_t)snprintf(body + n, sizeof(body) - n,
	    "{\"input_tokens\":7}");
	for (i = 0; i < USAGE_JSON_DEPTH + 4; i++)
		body[n++] = '}';
	{
		struct want	 none = bad;

		none.model = "";
		none.malformed = 0;
		expect_len("paths deeper than USAGE_JSON_DEPTH",
		    USAGE_API_ANTHROPIC, 0, body, n, 1, &none);
	}
}

static void
test_malformed_json(void)
{
	static const struct want kept = { "x", "", "", "", 5, NO, NO, NO, NO,
	    USAGE_PARTIAL, 1, 0 };
	static const struct want bad = { "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 1, 0 };
	static const struct want good = { "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 0 };
	static const char *const bads[] = {
		"{\"a\": [1, 2}",
		"{\"a\": 1]",
		"{\"a\": tru}",
		"{\"a\": nul}",
		"{\"a\": 01}",
		"{\"a\": 1.}",
		"{\"a\": .5}",
		"{\"a\": 1e}",
		"{\"a\": -}",
		"{\"a\": +1}",
		"{\"a\": \"x\ny\"}",
		"{\"a\": \"\\x\"}",
		"{\"a\": \"\\u12g4\"}",
		"{\"a\" 1}",
		"{\"a\": 1,}",
		"[1,]",
		"{,}",
		"{1: 2}",
		"{'a': 1}",
		"{} {}",
		"{}x",
		"\"a\" \"b\"",
		"]",
		"}",
		"data: {}",
		"\xef\xbb\xbf{}",
		"",
		"   ",
		"{\"a\": 1",
	};
	static const char *const goods[] = {
		"{}", "[]", " {\"a\" : [ ] , \"b\" : { } }\r\n\t", "[[],[{}]]",
		"\"s\"", "true", "false", "null", "0", "-0.0e-0",
		"{\"\": \"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\"}",
	};
	size_t	 i;

	expect("malformed after some usage", USAGE_API_ANTHROPIC, 0,
	    "{\"model\": \"x\", \"usage\": {\"input_tokens\": 5}, }", 1, &kept);
	expect("junk after the value", USAGE_API_ANTHROPIC, 0,
	    "{\"model\": \"x\", \"usage\": {\"input_tokens\": 5}} x", 1, &kept);
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++)
		expect(bads[i], USAGE_API_CHAT, 0, bads[i], 1, &bad);
	for (i = 0; i < sizeof(goods) / sizeof(goods[0]); i++)
		expect(goods[i], USAGE_API_CHAT, 0, goods[i], 1, &good);
	expect("empty and cut: not malformed", USAGE_API_CHAT, 0, "", 0,
	    &good);
}

static void
test_sse_syntax(void)
{
	static const struct want w = { "m", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 1 };
	static const struct want stop = { "m", "", "", "", 1, NO, NO, NO, NO,
	    USAGE_FINAL, 0, 2 };
	static const struct want none = { "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 0 };
	char	 body[512];
	int	 n;

	expect("comments, other fields, no space after the colon",
	    USAGE_API_CHAT, 1, ": OPENROUTER PROCESSING\n\nid: 1\nretry: 10\n"
	    ":\ndata:{\"model\":\"m\"}\nfoo: bar\n\n", 1, &w);
	expect("data over several lines", USAGE_API_CHAT, 1,
	    "data: {\"model\"\ndata: :\ndata:\ndata: \"m\"}\n\n", 1, &w);
	expect("a BOM first", USAGE_API_CHAT, 1,
	    "\xef\xbb\xbf" "data: {\"model\":\"m\"}\n\n", 1, &w);
	expect("the space after the colon only once", USAGE_API_CHAT, 1,
	    "data:  {\"model\":\"m\"}\n\n", 1, &w);
	expect("events without data are not dispatched", USAGE_API_CHAT, 1,
	    "event: a\n\nevent: b\nid: 2\n\n\n\n: x\n\n", 1, &none);
	expect("the event name is the last event line",
	    USAGE_API_ANTHROPIC, 1,
	    "data: {\"model\":\"m\",\"usage\":{\"input_tokens\":1}}\n\n"
	    "event: ping\nevent: message_stop\ndata: {}\n\n", 1, &stop);
	expect("the event name does not last past its event",
	    USAGE_API_ANTHROPIC, 1,
	    "event: message_stop\n\n"
	    "data: {\"model\":\"m\",\"usage\":{\"input_tokens\":1}}\n\n"
	    "data: {}\n\n", 1, &(struct want){ "m", "", "", "", 1, NO, NO, NO,
	    NO, USAGE_PARTIAL, 0, 2 });
	/* An event name longer than its limit is cut, and matches nothing. */
	n = snprintf(body, sizeof(body), "event: message_stop%0100d\n"
	    "data: {\"model\":\"m\",\"usage\":{\"input_tokens\":1}}\n\n", 0);
	if (n < 0 || (size_t)n >= sizeof(body))
		abort();
	expect("a long event name", USAGE_API_ANTHROPIC, 1, body, 1,
	    &(struct want){ "m", "", "", "", 1, NO, NO, NO, NO, USAGE_PARTIAL,
	    0, 1 });
	expect("a field name with no colon", USAGE_API_CHAT, 1,
	    "data\n\n", 1, &(struct want){ "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 1, 1 });
	expect("a long field name", USAGE_API_CHAT, 1,
	    "datadatadatadata: x\ndata: {\"model\":\"m\"}\n\n", 1, &w);
	expect("half a BOM", USAGE_API_CHAT, 1,
	    "\xef\xbb" "data: {}\n\ndata: {\"model\":\"m\"}\n\n", 1, &w);
}

static void
test_malformed_sse(void)
{
	static const struct want bad = { "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 1, 1 };
	static const struct want kept = { "gpt-4o-mini-2024-07-18",
	    "chatcmpl-123", "", "", NO, NO, NO, NO, NO, USAGE_NONE, 1, 2 };
	/*
	 * With the events dispatched: one found malformed before its blank
	 * line never is.
	 */
	static const struct {
		const char	*body;
		unsigned int	 events;
	} bads[] = {
		{ "data: not json\n\n", 0 },
		{ "data: {\"type\":\"message_start\"\n\n", 1 },
		{ "data: [DONE]x\n\n", 0 },
		{ "data: [DONE\n\n", 1 },
		{ "data: [\n\n", 1 },
		{ "data: [DONE]\ndata: [DONE]\n\n", 0 },
		{ "data: {}{}\n\n", 0 },
		{ "data:\n\n", 1 },
		{ "data: {\"a\":1}\r\rdata: {\"a\"\r\r", 2 },
	};
	size_t		 i;
	struct want	 w = bad;

	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		w.events = bads[i].events;
		expect(bads[i].body, USAGE_API_CHAT, 1, bads[i].body, 1, &w);
	}
	expect("malformed after good events", USAGE_API_CHAT, 1,
	    CHAT_HEAD "data: {\"choices\":[{\"finish_reason\":\"stop\"}]]\n\n"
	    CHAT_USAGE CHAT_DONE, 1, &kept);
	/* Lines of unknown fields, none of them data: no event at all. */
	expect("a JSON body read as events", USAGE_API_CHAT, 1,
	    chat_completion, 1, &(struct want){ "", "", "", "", NO, NO, NO, NO,
	    NO, USAGE_NONE, 0, 0 });
	expect("events read as a JSON body", USAGE_API_CHAT, 0,
	    chat_stream, 1, &(struct want){ "", "", "", "", NO, NO, NO, NO,
	    NO, USAGE_NONE, 1, 0 });
	expect("[DONE] with every API", USAGE_API_ANTHROPIC, 1,
	    "data: [DONE]\n\n", 1, &(struct want){ "", "", "", "", NO, NO, NO,
	    NO, NO, USAGE_NONE, 0, 1 });
}

static void
test_unknown_api(void)
{
	static const struct want none = { "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 0, 0 };
	static const struct want events = { "", "", "", "", NO, NO, NO, NO,
	    NO, USAGE_NONE, 0, 9 };
	static const struct want bad = { "", "", "", "", NO, NO, NO, NO, NO,
	    USAGE_NONE, 1, 0 };

	expect("no API: a message", USAGE_API_NONE, 0, anthropic_message, 1,
	    &none);
	expect("no API: events", USAGE_API_NONE, 1, anthropic_stream, 1,
	    &events);
	expect("no API: not JSON", USAGE_API_NONE, 0, "<html>502</html>", 1,
	    &bad);
	expect("no API: an out-of-range API", (enum usage_api)7, 0,
	    chat_completion, 1, &none);
}

int
main(void)
{
	test_api_of_path();
	test_request();
	test_anthropic();
	test_anthropic_stream();
	test_chat();
	test_chat_stream();
	test_responses();
	test_responses_stream();
	test_errors();
	test_strings();
	test_numbers();
	test_nesting();
	test_malformed_json();
	test_sse_syntax();
	test_malformed_sse();
	test_unknown_api();
	return tap_done();
}
