// sdk.cjs -- one call of a provider's official SDK, for the provider
// gateway's tests: the client a developer's program would be.
//
//   node sdk.cjs API MODE BASE_URL KEY MODEL [NAME:VALUE...]
//
//   API    anthropic (@anthropic-ai/sdk), chat or responses (openai)
//   MODE   create         one request, the whole answer
//          stream         anthropic: messages.stream() and its
//                         finalMessage(); chat: create({stream: true,
//                         stream_options: {include_usage: true}}); responses:
//                         create({stream: true})
//          create-stream  anthropic only: create({stream: true}), the raw
//                         events read one by one
//   NAME:VALUE  more request headers (defaultHeaders): x-test-events: 5000
//
// The packages come from NODE_PATH (t/lib-gateway.sh sets it to the
// pinned clients); the test CA from NODE_EXTRA_CA_CERTS.  The prompt is
// always one user message, "say hi" (Responses: the input "say hi"), so
// that the double's token numbers are known.  No retries (maxRetries 0),
// 30 s for the call.
//
// Prints one JSON object on stdout: ok, text, usage (as the SDK gives it:
// the final message's, the usage chunk's, response.completed's), id,
// request_id, events (how many stream events the SDK yielded),
// first_event_ms and last_event_ms (epoch milliseconds when the first and
// the last came), message_delta_output_tokens (anthropic create-stream:
// each message_delta's usage.output_tokens, in order); on failure
// error_class (the SDK's error class name), status, rate_limit_error (the
// error is the SDK's RateLimitError), message.  Exit status 0 when ok, 1
// when the call failed, 2 on bad usage.

'use strict';

const PROMPT = 'say hi';
const TIMEOUT_MS = 30000;

function now() {
	return performance.timeOrigin + performance.now();
}

async function anthropic(mode, baseURL, apiKey, model, headers, out) {
	const Anthropic = require('@anthropic-ai/sdk');
	out.sdk_error_base = Anthropic.RateLimitError;
	const client = new Anthropic({ apiKey, baseURL, maxRetries: 0,
	    timeout: TIMEOUT_MS, defaultHeaders: headers });
	const params = { model, max_tokens: 64,
	    messages: [{ role: 'user', content: PROMPT }] };
	let msg;
	if (mode === 'create') {
		msg = await client.messages.create(params);
	} else if (mode === 'stream') {
		const s = client.messages.stream(params);
		for await (const ev of s) {
			seen(out, ev.type);
		}
		msg = await s.finalMessage();
	} else if (mode === 'create-stream') {
		const s = await client.messages.create({ ...params, stream: true });
		out.request_id = s.response && s.response.headers.get('request-id');
		let text = '';
		let usage = null;
		out.message_delta_output_tokens = [];
		for await (const ev of s) {
			seen(out, ev.type);
			if (ev.type === 'message_start') {
				usage = { ...ev.message.usage };
				out.id = ev.message.id;
			} else if (ev.type === 'content_block_delta' &&
			    ev.delta.type === 'text_delta') {
				text += ev.delta.text;
			} else if (ev.type === 'message_delta') {
				out.message_delta_output_tokens.push(ev.usage.output_tokens);
				Object.assign(usage, ev.usage);
			}
		}
		out.text = text;
		out.usage = usage;
		return;
	} else {
		usage_error('anthropic MODE is create, stream or create-stream');
	}
	out.id = msg.id;
	out.request_id = msg._request_id;
	out.text = msg.content.map((b) => b.text || '').join('');
	out.usage = msg.usage;
}

async function openai(api, mode, baseURL, apiKey, model, headers, out) {
	const OpenAI = require('openai');
	out.sdk_error_base = OpenAI.RateLimitError;
	const client = new OpenAI({ apiKey, baseURL, maxRetries: 0,
	    timeout: TIMEOUT_MS, defaultHeaders: headers });
	if (mode !== 'create' && mode !== 'stream')
		usage_error(api + ' MODE is create or stream');
	const stream = mode === 'stream';
	if (api === 'chat') {
		const params = { model,
		    messages: [{ role: 'user', content: PROMPT }] };
		if (!stream) {
			const r = await client.chat.completions.create(params);
			out.id = r.id;
			out.request_id = r._request_id;
			out.text = r.choices[0].message.content;
			out.usage = r.usage;
			return;
		}
		const s = await client.chat.completions.create({ ...params,
		    stream: true, stream_options: { include_usage: true } });
		let text = '';
		for await (const chunk of s) {
			seen(out, chunk.usage ? 'usage' : 'chunk');
			out.id = chunk.id;
			if (chunk.choices.length > 0 && chunk.choices[0].delta.content)
				text += chunk.choices[0].delta.content;
			if (chunk.usage)
				out.usage = chunk.usage;
		}
		out.text = text;
		return;
	}
	const params = { model, input: PROMPT };
	if (!stream) {
		const r = await client.responses.create(params);
		out.id = r.id;
		out.request_id = r._request_id;
		out.text = r.output_text;
		out.usage = r.usage;
		return;
	}
	const s = await client.responses.create({ ...params, stream: true });
	let text = '';
	for await (const ev of s) {
		seen(out, ev.type);
		if (ev.type === 'response.output_text.delta')
			text += ev.delta;
		else if (ev.type === 'response.completed') {
			out.id = ev.response.id;
			out.usage = ev.response.usage;
		}
	}
	out.text = text;
}

function seen(out, type) {
	const t = now();
	if (out.events === 0)
		out.first_event_ms = t;
	out.last_event_ms = t;
	out.events++;
	out.event_types.push(type);
}

function usage_error(msg) {
	process.stderr.write('sdk.cjs: ' + msg + '\n');
	process.exit(2);
}

async function main() {
	const [api, mode, baseURL, apiKey, model, ...extra] = process.argv.slice(2);
	if (!model)
		usage_error('usage: node sdk.cjs API MODE BASE_URL KEY MODEL [NAME:VALUE...]');
	const headers = {};
	for (const h of extra) {
		const i = h.indexOf(':');
		if (i <= 0)
			usage_error('a header is NAME:VALUE, got ' + h);
		headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
	}
	const out = { ok: false, api, mode, model, events: 0, event_types: [],
	    first_event_ms: null, last_event_ms: null };
	try {
		if (api === 'anthropic')
			await anthropic(mode, baseURL, apiKey, model, headers, out);
		else if (api === 'chat' || api === 'responses')
			await openai(api, mode, baseURL, apiKey, model, headers, out);
		else
			usage_error('API is anthropic, chat or responses');
		out.ok = true;
	} catch (e) {
		out.error_class = e && e.constructor ? e.constructor.name : typeof e;
		out.status = e && e.status !== undefined ? e.status : null;
		out.rate_limit_error = out.sdk_error_base !== undefined &&
		    e instanceof out.sdk_error_base;
		out.message = String(e && e.message ? e.message : e);
	}
	delete out.sdk_error_base;
	if (out.event_types.length > 50)
		out.event_types = out.event_types.slice(0, 50);
	process.stdout.write(JSON.stringify(out) + '\n');
	process.exitCode = out.ok ? 0 : 1;
}

main();
