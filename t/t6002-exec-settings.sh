#!/bin/sh
test_description='enforcement level: the workspace settings API over HTTP and HTTPS, its cache, the local settings file'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns

# The settings servers (t/helpers/settingsd.py) run on 127.0.0.1 in this
# script's own network namespace; every URL that is not loopback below is
# one intutic must refuse before it connects anywhere (.invalid names, and
# in here nothing but lo exists anyway).  The level is read through
# `intutic doctor`, whose "level" line says the level and where it came
# from, and whose "note" line is what `intutic exec` prints on stderr.
command -v python3 >/dev/null 2>&1 || test_skip_all "needs python3 (the settings server)"
command -v openssl >/dev/null 2>&1 || test_skip_all "needs openssl (test certificates)"

SLOW_LIMIT_SECONDS=8	# a run whose API answers slowly: 3 s, and slack for ASan
DOCTOR_SECONDS=30	# one run of intutic doctor, at most

# A token no output may ever hold, and another one, as wrong as secret.
TOKEN=itk-$$-Zq8Xw3-never-shown
WRONG_TOKEN=itk-$$-Wr0ng-never-shown-either
SETTINGS=$TRASH_DIRECTORY/settings.yaml
STATE=$TRASH_DIRECTORY/state
ALL=$TRASH_DIRECTORY/all-output
NOBIN=$TRASH_DIRECTORY/nobin
INTUTIC_SETTINGS_FILE=$SETTINGS
INTUTIC_RULES=$TRASH_DIRECTORY/rules.yaml
export INTUTIC_SETTINGS_FILE INTUTIC_RULES

# use_cache NAME: a cache directory of its own for what follows:
# XDG_CACHE_HOME=$TRASH_DIRECTORY/NAME, the cache file in CACHE_FILE.
use_cache () {
	XDG_CACHE_HOME=$TRASH_DIRECTORY/$1
	CACHE_FILE=$XDG_CACHE_HOME/intutic/settings.json
	export XDG_CACHE_HOME
}

# api URL: the workspace API for what follows, with the token.
api () {
	INTUTIC_API_URL=$1
	INTUTIC_TOKEN=$TOKEN
	export INTUTIC_API_URL INTUTIC_TOKEN
}

no_api () {
	unset INTUTIC_API_URL INTUTIC_TOKEN INTUTIC_API_CA_FILE
}

# answer SERVER WORDS...: what SERVER answers from now on (settingsd.py's
# answer file).  body SERVER TEXT: answer 200 with TEXT as the body.
answer () {
	answer_srv_=$1
	shift
	printf '%s\n' "$*" >"$TRASH_DIRECTORY/$answer_srv_.answer"
}
body () {
	printf 'body\n%s' "$2" >"$TRASH_DIRECTORY/$1.answer"
}

# start_api NAME [OPTIONS...]: settingsd.py as NAME, expecting $TOKEN;
# NAME_PORT, NAME_PID and NAME_LOG, stopped at the end of the script.
start_api () {
	start_api_name_=$1
	shift
	answer "$start_api_name_" level off &&
	test_start_helper_ "$start_api_name_" settingsd.py \
		--answer-file "$TRASH_DIRECTORY/$start_api_name_.answer" \
		--token-file "$TRASH_DIRECTORY/token" "$@"
}

# doctor: intutic doctor (no runtime in its PATH, no proxy, bounded in
# time), its output in out and err, both appended to ALL; its "level" line
# in level and its "note" line in note, "N s ago" written "S s ago" in
# both.  Fails when anything came on stderr (a sanitizer report).
doctor () {
	timeout -s KILL "$DOCTOR_SECONDS" env PATH="$NOBIN" "$INTUTIC" doctor \
		--state-dir "$STATE" >out 2>err
	doctor_code=$?
	cat out err >>"$ALL"
	sed -n 's/^level  *\([a-z]*\)  *\(.*\)$/\1: \2/p' out |
		sed 's/[0-9][0-9]* s ago/S s ago/g' >level
	sed -n 's/^  *note  *//p' out | sed 's/[0-9][0-9]* s ago/S s ago/g' >note
	test "$doctor_code" = 0 || test "$doctor_code" = 1 || {
		echo "intutic doctor exited $doctor_code" >&2
		return 1
	}
	test_must_be_empty err
}

# expect_level TEXT: the level line is "VERDICT: LEVEL, from SOURCE".
# expect_note TEXT: the note line (none: "").
expect_level () {
	printf '%s\n' "$1" >expect.level &&
	test_cmp expect.level level
}
expect_note () {
	if test -z "$1"; then
		test_must_be_empty note
	else
		printf '%s\n' "$1" >expect.note &&
		test_cmp expect.note note
	fi
}

# cache_is LEVEL URL [LOGINS]: the cache file says LEVEL from URL, logins
# LOGINS (default allow), fetched within the last minute; mode 0600 in a directory of mode 0700, nothing else
# there (no temporary file left).
cache_is () {
	test -f "$CACHE_FILE" || { echo "no cache file $CACHE_FILE" >&2; return 1; }
	cache_now_=$(date +%s)
	python3 - "$CACHE_FILE" "$1" "$2" "$cache_now_" ${3:+"$3"} <<-\EOF
	import json, sys
	c = json.load(open(sys.argv[1]))
	assert sorted(c) == ["fetched", "level", "logins", "url"] or \
	    sorted(c) == ["etag", "fetched", "level", "logins", "url"], c
	assert c["level"] == sys.argv[2], c
	assert c["logins"] == (sys.argv[5] if len(sys.argv) > 5 else "allow"), c
	assert c["url"] == sys.argv[3], c
	assert 0 <= int(sys.argv[4]) - c["fetched"] <= 60, c
	EOF
	test "$(stat -c %a "$CACHE_FILE")" = 600 || {
		echo "cache mode $(stat -c %a "$CACHE_FILE"), not 600" >&2
		return 1
	}
	test "$(stat -c %a "${CACHE_FILE%/*}")" = 700 || {
		echo "cache directory mode $(stat -c %a "${CACHE_FILE%/*}"), not 700" >&2
		return 1
	}
	ls -A "${CACHE_FILE%/*}" >cache.ls &&
	echo settings.json >cache.expect &&
	test_cmp cache.expect cache.ls
}

# cache_age SECONDS: make the cache say it was fetched SECONDS ago.
cache_age () {
	cache_age_url_=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$CACHE_FILE") &&
	cache_age_level_=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["level"])' "$CACHE_FILE") &&
	printf '{"level": "%s", "url": "%s", "fetched": %s}\n' "$cache_age_level_" \
		"$cache_age_url_" "$(($(date +%s) - $1))" >"$CACHE_FILE"
}

test_expect_success 'setup: certificates, the settings servers (HTTP, HTTPS), a rule file' '
	test_certs &&
	printf "%s" "$TOKEN" >token &&
	mkdir -p "$NOBIN" "$STATE" &&
	printf "version: 1\nallow: [a.example.com]\n" >"$INTUTIC_RULES" &&
	: >"$ALL" &&
	start_api http &&
	start_api https --tls "$CERT_FILE" "$KEY_FILE" &&
	start_api down &&
	printf "version: 1\nallow: [fleet.example.com]\n" >api-rules.yaml &&
	start_api tagged --etag --rules-file "$TRASH_DIRECTORY/api-rules.yaml" &&
	TAGGED_URL=http://127.0.0.1:$TAGGED_PORT &&
	HTTP_URL=http://127.0.0.1:$HTTP_PORT &&
	HTTPS_URL=https://127.0.0.1:$HTTPS_PORT &&
	DOWN_URL=http://127.0.0.1:$DOWN_PORT
'

# --- no API -------------------------------------------------------------------

test_expect_success 'no API, no settings file: off, by default' '
	no_api && use_cache c-none &&
	doctor &&
	expect_level "ok: off, from default (no workspace API, no $SETTINGS)" &&
	expect_note "" &&
	test_path_is_missing "$XDG_CACHE_HOME"
'

test_expect_success 'the settings file alone gives the level, flow or block YAML' '
	for l in off recommend require; do
		printf "sandbox: {enforcement: $l}\n" >"$SETTINGS" &&
		doctor &&
		expect_level "ok: $l, from $SETTINGS" &&
		expect_note "" || return 1
	done &&
	printf "# the operator says\nsandbox:\n  enforcement: \"recommend\"\n" >"$SETTINGS" &&
	doctor &&
	expect_level "ok: recommend, from $SETTINGS"
'

# bad_settings CONTENT MESSAGE: the settings file CONTENT (printf format)
# makes the level line a failure saying MESSAGE, file:line:col first.
bad_settings () {
	printf "$1" >"$SETTINGS" &&
	doctor &&
	test "$doctor_code" = 1 &&
	expect_level "fail: $2; fix: correct the setting; until then \`intutic exec\` refuses to run"
}

test_expect_success 'a malformed settings file is an error naming line and column' '
	no_api &&
	bad_settings "sandbox: {enforcment: require}\n" \
		"$SETTINGS:1:11: unknown key '\''enforcment'\'' in '\''sandbox'\'': expected enforcement or logins" &&
	bad_settings "sandbox: {enforcement: strict}\n" \
		"$SETTINGS:1:24: '\''enforcement'\'' is '\''strict'\'': expected off, recommend or require" &&
	bad_settings "sandbox:\n\tenforcement: off\n" \
		"$SETTINGS:2:1: invalid YAML: found character that cannot start any token while scanning for the next token (started at 2:1); tabs cannot indent YAML: use spaces" &&
	bad_settings "sandbox: [require]\n" \
		"$SETTINGS:1:10: '\''sandbox'\'' is a list: expected a mapping" &&
	bad_settings "sandbox: {}\n" \
		"$SETTINGS:1:10: '\''sandbox'\'' has no '\''enforcement'\'' (off, recommend or require)" &&
	bad_settings "sandbox: {enforcement: off, enforcement: require}\n" \
		"$SETTINGS:1:29: '\''enforcement'\'' appears twice" &&
	bad_settings "sandbx: {enforcement: require}\n" \
		"$SETTINGS:1:1: unknown key '\''sandbx'\'': expected sandbox" &&
	bad_settings "# nothing\n" \
		"$SETTINGS:2:1: empty file: expected sandbox: {enforcement: LEVEL}" &&
	bad_settings "sandbox: &a {enforcement: off}\n" \
		"$SETTINGS:1:10: YAML anchor '\''&a'\'' found: aliases and anchors are not allowed here" &&
	bad_settings "sandbox: !!map {enforcement: off}\n" \
		"$SETTINGS:1:10: YAML tag '\''!!map'\'' found: tags are not allowed here" &&
	bad_settings "sandbox: {enforcement: off}\n---\nsandbox: {enforcement: off}\n" \
		"$SETTINGS:2:1: a second YAML document: expected exactly one" &&
	bad_settings "sandbox: {enforcement: \"\\\\x1b\"}\n" \
		"$SETTINGS:1:24: '\''enforcement'\'' is '\''\\x1b'\'': expected off, recommend or require" &&
	rm -f "$SETTINGS"
'

test_expect_success 'a settings file that is not a file (a directory, a FIFO) is an error' '
	no_api &&
	test_when_finished "rmdir \"\$SETTINGS\"" &&
	mkdir "$SETTINGS" &&
	doctor &&
	expect_level "fail: '\''$SETTINGS'\'' is not a regular file; fix: correct the setting; until then \`intutic exec\` refuses to run" &&
	rmdir "$SETTINGS" && mkfifo "$SETTINGS" &&
	doctor &&
	expect_level "fail: '\''$SETTINGS'\'' is not a regular file; fix: correct the setting; until then \`intutic exec\` refuses to run" &&
	rm "$SETTINGS" && mkdir "$SETTINGS"
'

# --- the API answers ----------------------------------------------------------------

test_expect_success 'each level from the API over HTTP: fetched now, with the token, cached 0600' '
	rm -f "$SETTINGS" && api "$HTTP_URL" && use_cache c-http &&
	for l in off recommend require; do
		answer http level $l &&
		server_mark http &&
		doctor &&
		expect_level "ok: $l, from workspace API $HTTP_URL (fetched now)" &&
		expect_note "" &&
		server_since http &&
		grep "settingsd: GET" http.new >requests &&
		echo "settingsd: GET /api/v1/workspace/settings auth=ok answer=level $l inm=none" >expect &&
		test_cmp expect requests &&
		cache_is $l "$HTTP_URL" || return 1
	done
'

# cache_etag: the entity tag the cache file holds ("" when none), on stdout.
cache_etag () {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("etag", ""))' "$CACHE_FILE"
}

test_expect_success 'an API that tags its answers: the tag cached, the next request revalidates (If-None-Match), a 304 keeps the cached level' '
	rm -f "$SETTINGS" && api "$TAGGED_URL" && use_cache c-tagged &&
	answer tagged level recommend &&
	server_mark tagged &&
	doctor &&
	expect_level "ok: recommend, from workspace API $TAGGED_URL (fetched now)" &&
	cache_is recommend "$TAGGED_URL" &&
	tag=$(cache_etag) &&
	test_grep "^\"[0-9a-f]{16}\"$" - <<-EOF &&
	$tag
	EOF
	doctor &&
	expect_level "ok: recommend, from workspace API $TAGGED_URL (not modified since it was fetched S s ago: ETag $tag)" &&
	expect_note "" &&
	server_since tagged &&
	grep "settingsd: GET" tagged.new >requests &&
	cat >expect <<-EOF &&
	settingsd: GET /api/v1/workspace/settings auth=ok answer=level recommend inm=none
	settingsd: GET /api/v1/workspace/settings auth=ok answer=level recommend inm=$tag -> 304
	EOF
	test_cmp expect requests &&
	cache_is recommend "$TAGGED_URL" &&
	test "$(cache_etag)" = "$tag"
'

test_expect_success 'a tagged API whose level changes: the old tag no longer matches, the new level and its tag are fetched and cached' '
	api "$TAGGED_URL" && use_cache c-tagged &&
	old=$(cache_etag) &&
	answer tagged level require &&
	server_mark tagged &&
	doctor &&
	expect_level "ok: require, from workspace API $TAGGED_URL (fetched now)" &&
	server_since tagged &&
	test_grep "answer=level require inm=$old$" tagged.new &&
	cache_is require "$TAGGED_URL" &&
	new=$(cache_etag) &&
	test -n "$new" && test "$new" != "$old"
'

test_expect_success 'a cache whose tag no entity tag could be (a space in it) is malformed: not sent, the level fetched whole, the cache made good' '
	api "$TAGGED_URL" && use_cache c-tagged &&
	printf "{\"level\": \"off\", \"url\": \"%s\", \"fetched\": %s, \"etag\": \"a b\"}\n" \
		"$TAGGED_URL" "$(date +%s)" >"$CACHE_FILE" &&
	answer tagged level off &&
	server_mark tagged &&
	doctor &&
	expect_level "ok: off, from workspace API $TAGGED_URL (fetched now)" &&
	server_since tagged &&
	test_grep "answer=level off inm=none$" tagged.new &&
	cache_is off "$TAGGED_URL" &&
	test_grep "^\"[0-9a-f]{16}\"$" - <<-EOF
	$(cache_etag)
	EOF
'

# --- rules fetch: the workspace API's rules into a file --------------------------

# fetch_rules: intutic rules fetch --out fleet.yaml; out, err; its status in
# fetch_code (the test checks it).
fetch_rules () {
	timeout -s KILL 20 "$INTUTIC" rules fetch --out fleet.yaml >out 2>err
	fetch_code=$?
	cat out err >>"$ALL"
}

test_expect_success 'rules fetch: the API'"'"'s rules into FILE once they load, with its ETag; FILE is a rule file as any other' '
	api "$TAGGED_URL" &&
	server_mark tagged &&
	fetch_rules && test "$fetch_code" = 0 &&
	RULES_URL=$TAGGED_URL/api/v1/workspace/rules &&
	test_grep "^fleet.yaml: 1 entries from $RULES_URL [(]ETag \"[0-9a-f]{16}\"[)]$" out &&
	head -n 2 fleet.yaml >api.part && test_cmp api-rules.yaml api.part &&
	test_grep "^# intutic rules fetch: \"[0-9a-f]{16}\" from $RULES_URL$" fleet.yaml &&
	"$INTUTIC" rules check fleet.yaml &&
	"$INTUTIC" rules test fleet.yaml fleet.example.com >decided &&
	test_grep "allow" decided &&
	server_since tagged &&
	test_grep "GET /api/v1/workspace/rules auth=ok inm=none$" tagged.new &&
	! ls fleet.yaml.fetch.* 2>/dev/null
'

test_expect_success 'rules fetch again: asked with the kept ETag, a 304, FILE untouched' '
	api "$TAGGED_URL" &&
	cp fleet.yaml fleet.before &&
	tag=$(sed -n "s/^# intutic rules fetch: \(.*\) from .*/\1/p" fleet.yaml) &&
	server_mark tagged &&
	fetch_rules && test "$fetch_code" = 0 &&
	test_grep "^fleet.yaml: not modified at $RULES_URL [(]ETag $tag[)]$" out &&
	test_cmp fleet.before fleet.yaml &&
	server_since tagged &&
	test_grep "inm=$tag -> 304$" tagged.new
'

test_expect_success 'rules fetch after the API'"'"'s rules changed: the new rules, the new tag' '
	api "$TAGGED_URL" &&
	printf "version: 1\nallow: [fleet.example.com, more.example.com]\n" >api-rules.yaml &&
	fetch_rules && test "$fetch_code" = 0 &&
	test_grep "^fleet.yaml: 2 entries from" out &&
	"$INTUTIC" rules test fleet.yaml more.example.com >decided &&
	test_grep "allow" decided
'

test_expect_success 'rules fetch of rules that do not load: the API'"'"'s LINE:COL, exit 2, FILE unchanged, nothing left beside it' '
	api "$TAGGED_URL" &&
	cp fleet.yaml fleet.before &&
	printf "version: 1\nallow: [fleet.example.com]\nalow: [typo.example.com]\n" >api-rules.yaml &&
	fetch_rules && test "$fetch_code" = 2 &&
	test_grep "^$RULES_URL:3:1: " err &&
	test_grep "do not load: fleet.yaml is unchanged" err &&
	test_cmp fleet.before fleet.yaml &&
	! ls fleet.yaml.fetch.* 2>/dev/null
'

test_expect_success 'rules fetch: an API error answer or none at all is exit 1, FILE unchanged; no API configured is exit 2; the token never shown' '
	api "$TAGGED_URL" &&
	cp fleet.yaml fleet.before &&
	printf "status 503\n" >api-rules.yaml &&
	fetch_rules && test "$fetch_code" = 1 &&
	test_grep "gave no rules [(]HTTP 503[)]: fleet.yaml is unchanged" err &&
	api "http://127.0.0.1:$(free_port)" &&
	fetch_rules && test "$fetch_code" = 1 &&
	test_grep "gave no rules [(]Couldn.t connect" err &&
	test_cmp fleet.before fleet.yaml &&
	no_api &&
	fetch_rules && test "$fetch_code" = 2 &&
	test_grep "INTUTIC_API_URL is not set" err &&
	test_expect_code 2 "$INTUTIC" rules fetch 2>err &&
	test_grep "[-][-]out FILE says where the rules go" err &&
	printf "version: 1\nallow: [fleet.example.com]\n" >api-rules.yaml &&
	! grep -r -e "$TOKEN" out err fleet.yaml
'

test_expect_success 'a base URL with a path and a trailing slash' '
	api "$HTTP_URL/" && use_cache c-slash &&
	answer http level recommend &&
	doctor &&
	expect_level "ok: recommend, from workspace API $HTTP_URL/ (fetched now)" &&
	cache_is recommend "$HTTP_URL/" &&
	api "$HTTP_URL/tenant" &&
	server_mark http &&
	doctor &&
	server_since http &&
	test_grep "GET /tenant/api/v1/workspace/settings -> 404" http.new &&
	expect_level "warn: require, from fail-closed default (the workspace API $HTTP_URL/tenant did not answer: HTTP 404; the cache holds the level of another API, $HTTP_URL/)"
'

test_expect_success 'http://localhost is loopback too' '
	api "http://localhost:$HTTP_PORT" && use_cache c-localhost &&
	answer http level recommend &&
	doctor &&
	expect_level "ok: recommend, from workspace API http://localhost:$HTTP_PORT (fetched now)"
'

test_expect_success 'each level from the API over HTTPS, trusting INTUTIC_API_CA_FILE' '
	api "$HTTPS_URL" && use_cache c-https &&
	INTUTIC_API_CA_FILE=$CA_FILE && export INTUTIC_API_CA_FILE &&
	for l in off recommend require; do
		answer https level $l &&
		doctor &&
		expect_level "ok: $l, from workspace API $HTTPS_URL (fetched now)" &&
		cache_is $l "$HTTPS_URL" || return 1
	done
'

test_expect_success 'HTTPS without the CA that signed the server: refused, fail closed' '
	api "$HTTPS_URL" && use_cache c-https-noca &&
	unset INTUTIC_API_CA_FILE &&
	answer https level off &&
	doctor &&
	test_grep "^warn: require, from fail-closed default \(the workspace API $HTTPS_URL did not answer: .*certificate.*; nothing is cached\)\$" level &&
	test_grep "the level is require \(fail closed\)\$" note &&
	test_path_is_missing "$CACHE_FILE"
'

test_expect_success 'an INTUTIC_API_CA_FILE that cannot be read is a configuration error' '
	api "$HTTPS_URL" && use_cache c-https-badca &&
	INTUTIC_API_CA_FILE=$TRASH_DIRECTORY/no-such-ca.pem && export INTUTIC_API_CA_FILE &&
	doctor &&
	expect_level "fail: INTUTIC_API_CA_FILE '\''$INTUTIC_API_CA_FILE'\'' cannot be read: No such file or directory; fix: correct the setting; until then \`intutic exec\` refuses to run" &&
	unset INTUTIC_API_CA_FILE &&
	test_path_is_missing "$XDG_CACHE_HOME"
'

# --- the API does not answer ----------------------------------------------------

# failing WHY: the level line and note of a run whose API ($HTTP_URL)
# gave no usable answer (WHY) while recommend from it was cached; the
# cache file is byte for byte what it was.
failing () {
	doctor &&
	expect_level "warn: recommend, from cache of $HTTP_URL (fetched S s ago; the API did not answer: $1)" &&
	expect_note "the workspace API $HTTP_URL did not answer ($1): using the level cached S s ago (recommend)" &&
	cmp cache.before "$CACHE_FILE"
}

test_expect_success 'error answers: the cached level, a note, the cache untouched' '
	api "$HTTP_URL" && use_cache c-errors &&
	answer http level recommend &&
	doctor &&
	expect_level "ok: recommend, from workspace API $HTTP_URL (fetched now)" &&
	cp "$CACHE_FILE" cache.before &&
	answer http status 500 && failing "HTTP 500" &&
	answer http status 503 && failing "HTTP 503" &&
	answer http status 403 && failing "HTTP 403" &&
	answer http level strict &&
	failing "HTTP 200 but not valid settings: line 1 column 106: '\''enforcement'\'' is '\''strict'\'': expected off, recommend or require" &&
	answer http huge 1048576 && failing "the answer is larger than 65536 bytes" &&
	answer http huge-chunked 1048576 && failing "the answer is larger than 65536 bytes" &&
	server_mark http &&
	answer http redirect && failing "HTTP 302, a redirect, which is not followed" &&
	server_since http &&
	test_grep -v "/elsewhere" http.new
'

test_expect_success 'garbage answers: the cached level, a precise reason, the cache untouched' '
	api "$HTTP_URL" && use_cache c-errors &&
	v="HTTP 200 but not valid settings" &&
	body http "" && failing "$v: empty: expected a JSON object" &&
	body http "{\"sandbox\": [1, 2" &&
	failing "$v: line 1 column 13: '\''sandbox'\'' is an array: expected an object" &&
	body http "{\"sandbox\": {}}" &&
	failing "$v: line 1 column 13: '\''sandbox'\'' has no '\''enforcement'\'' (off, recommend or require)" &&
	body http "{\"other\": 1}" &&
	failing "$v: line 1 column 1: no '\''sandbox'\'' (expected {\"sandbox\": {\"enforcement\": LEVEL}})" &&
	body http "{\"sandbox\": {\"enforcement\": \"off\"}, \"sandbox\": {}}" &&
	failing "$v: line 1 column 37: '\''sandbox'\'' appears twice" &&
	body http "sandbox: {enforcement: off}" &&
	failing "$v: line 1 column 1: not JSON: a YAML block mapping" &&
	body http "{\"sandbox\": {\"enforcement\": off}}" &&
	failing "$v: line 1 column 29: not JSON: '\''off'\'' is neither a string in double quotes nor a number, true, false or null" &&
	body http "{\"sandbox\": {\"enforcement\": \"off\"}, \"x\": &a 1}" &&
	failing "$v: line 1 column 42: YAML anchor '\''&a'\'' found: aliases and anchors are not allowed here" &&
	body http "[\"sandbox\"]" &&
	failing "$v: line 1 column 1: found an array: expected a JSON object" &&
	body http "{\"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}" &&
	failing "$v: line 1 column 38: collections nested deeper than 32 levels" &&
	body http "$(printf "{\"sandbox\": {\"enforcement\": \"off\033[2J\"}}")" &&
	failing "$v: line 1 column 33: invalid character (byte 0x1b): control characters are not allowed" &&
	body http "{\"sandbox\": {\"enforcement\": \"off\\u001b[2J\\n\"}}" &&
	failing "$v: line 1 column 29: '\''enforcement'\'' is '\''off\\x1b[2J\\x0a'\'': expected off, recommend or require" &&
	body http "$(printf "{\"sandbox\": \"\377\"}")" &&
	failing "$v: line 1 column 14: invalid character (byte 0xff): invalid leading UTF-8 octet"
'

test_expect_success 'a wrong token: 401, the cached level; neither token shown' '
	api "$HTTP_URL" && use_cache c-errors &&
	answer http level require &&
	INTUTIC_TOKEN=$WRONG_TOKEN &&
	failing "HTTP 401" &&
	unset INTUTIC_TOKEN &&
	failing "HTTP 401 (INTUTIC_TOKEN is not set)" &&
	test_grep -v -F "$WRONG_TOKEN" out
'

test_expect_success 'a slow body and no answer at all: given up after 3 s, the cached level' '
	api "$HTTP_URL" && use_cache c-errors &&
	for a in "slow 6000" "hang 6000"; do
		answer http $a &&
		start=$(date +%s) &&
		doctor &&
		end=$(date +%s) &&
		test $((end - start)) -le $SLOW_LIMIT_SECONDS &&
		test_grep "^warn: recommend, from cache of $HTTP_URL \(fetched S s ago; the API did not answer: Timeout was reached: Operation timed out after 3[0-9]{3} milliseconds with .*\)\$" level &&
		test_grep "using the level cached S s ago \(recommend\)\$" note &&
		cmp cache.before "$CACHE_FILE" || return 1
	done
'

test_expect_success 'the server down: the cached level, with its age' '
	api "$DOWN_URL" && use_cache c-down &&
	answer down level require &&
	doctor &&
	expect_level "ok: require, from workspace API $DOWN_URL (fetched now)" &&
	stop_server down &&
	cp "$CACHE_FILE" cache.before &&
	doctor &&
	why="Couldn'\''t connect to server: Failed to connect to 127.0.0.1 port $DOWN_PORT after 0 ms: Couldn'\''t connect to server" &&
	sed "s/after [0-9]* ms/after 0 ms/g" level >level.0 && mv level.0 level &&
	sed "s/after [0-9]* ms/after 0 ms/g" note >note.0 && mv note.0 note &&
	expect_level "warn: require, from cache of $DOWN_URL (fetched S s ago; the API did not answer: $why)" &&
	expect_note "the workspace API $DOWN_URL did not answer ($why): using the level cached S s ago (require)" &&
	cmp cache.before "$CACHE_FILE" &&
	cache_age $((3 * 3600 + 120)) &&
	doctor &&
	test_grep "using the level cached 3 h ago \(require\)\$" note &&
	test_grep "^warn: require, from cache of $DOWN_URL \(fetched 3 h ago; " level &&
	cache_age $((3 * 86400)) &&
	doctor &&
	test_grep "using the level cached 3 days ago \(require\)\$" note &&
	cache_age 300 &&
	doctor &&
	test_grep "using the level cached 5 min ago \(require\)\$" note
'

test_expect_success 'nothing cached: require, fail closed, with a note; no cache made' '
	api "$HTTP_URL" && use_cache c-empty &&
	answer http status 500 &&
	doctor &&
	expect_level "warn: require, from fail-closed default (the workspace API $HTTP_URL did not answer: HTTP 500; nothing is cached)" &&
	expect_note "the workspace API $HTTP_URL did not answer (HTTP 500) and nothing is cached: the level is require (fail closed)" &&
	test_path_is_missing "$XDG_CACHE_HOME"
'

test_expect_success 'nothing cached but a settings file: its level, with a note' '
	api "$HTTP_URL" && use_cache c-empty &&
	answer http status 500 &&
	printf "sandbox: {enforcement: recommend}\n" >"$SETTINGS" &&
	doctor &&
	expect_level "warn: recommend, from $SETTINGS (the workspace API $HTTP_URL did not answer: HTTP 500; nothing is cached)" &&
	expect_note "the workspace API $HTTP_URL did not answer (HTTP 500) and nothing is cached: using the level of $SETTINGS (recommend)" &&
	rm -f "$SETTINGS"
'

test_expect_success 'the cache of another API URL is not used' '
	api "$HTTP_URL" && use_cache c-other &&
	answer http level off &&
	doctor &&
	expect_level "ok: off, from workspace API $HTTP_URL (fetched now)" &&
	cp "$CACHE_FILE" cache.before &&
	api "$DOWN_URL" &&
	doctor &&
	test_grep "^warn: require, from fail-closed default \(the workspace API $DOWN_URL did not answer: .*; the cache holds the level of another API, $HTTP_URL\)\$" level &&
	cmp cache.before "$CACHE_FILE"
'

test_expect_success 'a cache others may write, or a malformed one, is not used' '
	api "$HTTP_URL" && use_cache c-bad &&
	answer http level off &&
	doctor &&
	cp "$CACHE_FILE" cache.before &&
	chmod 0666 "$CACHE_FILE" &&
	answer http status 500 &&
	doctor &&
	expect_level "warn: require, from fail-closed default (the workspace API $HTTP_URL did not answer: HTTP 500; '\''$CACHE_FILE'\'' is not this user'\''s alone (owner uid 0, mode 0666))" &&
	chmod 0600 "$CACHE_FILE" &&
	printf "{\"level\": \"off\", \"url\": \"%s\"}\n" "$HTTP_URL" >"$CACHE_FILE" &&
	doctor &&
	expect_level "warn: require, from fail-closed default (the workspace API $HTTP_URL did not answer: HTTP 500; the cache '\''$CACHE_FILE'\'' is malformed: line 1 column 1: '\''fetched'\'' is missing)" &&
	rm "$CACHE_FILE" && ln -s "$TRASH_DIRECTORY/cache.before" "$CACHE_FILE" &&
	doctor &&
	test_grep "^warn: require, from fail-closed default \(the workspace API $HTTP_URL did not answer: HTTP 500; cannot read .*: Too many levels of symbolic links\)\$" level
'

test_expect_success 'a stricter settings file holds against the API, a looser one does not' '
	api "$HTTP_URL" && use_cache c-stricter &&
	printf "sandbox: {enforcement: require}\n" >"$SETTINGS" &&
	answer http level off &&
	doctor &&
	expect_level "ok: require, from $SETTINGS (stricter than off from the workspace API $HTTP_URL (fetched now))" &&
	cache_is off "$HTTP_URL" &&
	answer http status 500 &&
	doctor &&
	expect_level "warn: require, from $SETTINGS (stricter than off from the cache of $HTTP_URL (fetched S s ago; the API did not answer: HTTP 500))" &&
	expect_note "the workspace API $HTTP_URL did not answer (HTTP 500): using the level cached S s ago (off); $SETTINGS says require, which is stricter and holds" &&
	printf "sandbox: {enforcement: recommend}\n" >"$SETTINGS" &&
	answer http level require &&
	doctor &&
	expect_level "ok: require, from workspace API $HTTP_URL (fetched now)" &&
	rm -f "$SETTINGS"
'

# --- sandbox.logins ---------------------------------------------------------------

# logins_line: doctor's "logins" line, "VERDICT: DETAIL" ("" when none).
logins_line () {
	sed -n 's/^logins  *\([a-z]*\)  *\(.*\)$/\1: \2/p' out |
		sed 's/[0-9][0-9]* s ago/S s ago/g'
}

test_expect_success 'logins: deny in the settings file: doctor says so and where from; allow and none say nothing' '
	no_api && use_cache c-logins-local &&
	printf "sandbox:\n  enforcement: off\n  logins: deny\n" >"$SETTINGS" &&
	doctor &&
	expect_level "ok: off, from $SETTINGS" &&
	echo "ok: denied, from $SETTINGS: \`intutic exec --sandbox-login\` is refused" >expect &&
	logins_line >got && test_cmp expect got &&
	printf "sandbox: {enforcement: off, logins: allow}\n" >"$SETTINGS" &&
	doctor &&
	logins_line >got && test_must_be_empty got &&
	printf "sandbox: {enforcement: off}\n" >"$SETTINGS" &&
	doctor &&
	logins_line >got && test_must_be_empty got &&
	rm -f "$SETTINGS"
'

test_expect_success 'logins: a bad value or twice is an error naming line and column' '
	no_api &&
	bad_settings "sandbox: {enforcement: off, logins: maybe}\n" \
		"$SETTINGS:1:37: '\''logins'\'' is '\''maybe'\'': expected allow or deny" &&
	bad_settings "sandbox: {enforcement: off, logins: [deny]}\n" \
		"$SETTINGS:1:37: '\''logins'\'' is a list: expected allow or deny" &&
	bad_settings "sandbox: {enforcement: off, logins: deny, logins: allow}\n" \
		"$SETTINGS:1:43: '\''logins'\'' appears twice" &&
	bad_settings "sandbox: {logins: deny}\n" \
		"$SETTINGS:1:10: '\''sandbox'\'' has no '\''enforcement'\'' (off, recommend or require)" &&
	rm -f "$SETTINGS"
'

test_expect_success 'logins: deny from the API: said, cached, and kept from the cache when the API is down' '
	api "$HTTP_URL" && use_cache c-logins-api &&
	body http "{\"sandbox\": {\"enforcement\": \"off\", \"logins\": \"deny\"}}" &&
	doctor &&
	expect_level "ok: off, from workspace API $HTTP_URL (fetched now)" &&
	echo "ok: denied, from workspace API $HTTP_URL (fetched now): \`intutic exec --sandbox-login\` is refused" >expect &&
	logins_line >got && test_cmp expect got &&
	cache_is off "$HTTP_URL" deny &&
	answer http status 500 &&
	doctor &&
	echo "ok: denied, from cache of $HTTP_URL (fetched S s ago; the API did not answer: HTTP 500): \`intutic exec --sandbox-login\` is refused" >expect &&
	logins_line >got && test_cmp expect got &&
	body http "{\"sandbox\": {\"enforcement\": \"off\", \"logins\": \"allow\"}}" &&
	doctor &&
	logins_line >got && test_must_be_empty got &&
	cache_is off "$HTTP_URL" allow
'

test_expect_success 'logins: the API never allows what the settings file denies; nothing answered and nothing cached denies them' '
	api "$HTTP_URL" && use_cache c-logins-both &&
	printf "sandbox: {enforcement: off, logins: deny}\n" >"$SETTINGS" &&
	body http "{\"sandbox\": {\"enforcement\": \"off\", \"logins\": \"allow\"}}" &&
	doctor &&
	echo "ok: denied, from $SETTINGS: \`intutic exec --sandbox-login\` is refused" >expect &&
	logins_line >got && test_cmp expect got &&
	rm -f "$SETTINGS" &&
	use_cache c-logins-none &&
	answer http status 500 &&
	doctor &&
	echo "ok: denied, from fail-closed default (the workspace API $HTTP_URL did not answer: HTTP 500; nothing is cached): \`intutic exec --sandbox-login\` is refused" >expect &&
	logins_line >got && test_cmp expect got
'

test_expect_success 'logins: a cache an older intutic wrote (no "logins") allows them' '
	api "$HTTP_URL" && use_cache c-logins-old &&
	answer http level off &&
	doctor &&
	cache_age 60 &&
	answer http status 500 &&
	doctor &&
	test_grep "^warn: off, from cache of $HTTP_URL" level &&
	logins_line >got && test_must_be_empty got
'

# --- configuration errors: refused before anything is connected to -------------------

# refused URL MESSAGE: INTUTIC_API_URL=URL is a configuration error saying
# MESSAGE; no cache is made.
refused () {
	api "$1" && use_cache c-refused &&
	doctor &&
	test "$doctor_code" = 1 &&
	expect_level "fail: $2; fix: correct the setting; until then \`intutic exec\` refuses to run" &&
	expect_note "" &&
	test_path_is_missing "$XDG_CACHE_HOME"
}

test_expect_success 'http:// to a host that is not loopback is refused' '
	for u in http://api.example.invalid http://api.example.invalid:80/x \
	    http://127.0.0.1.example.invalid http://localhost.example.invalid \
	    HTTP://api.example.invalid; do
		refused "$u" "INTUTIC_API_URL '\''$u'\'' is http:// to a host that is not loopback: use https:// (http:// is only for 127.0.0.0/8, [::1] and localhost)" || return 1
	done
'

test_expect_success 'credentials, a query, another scheme, a malformed URL: refused, nothing shown' '
	refused "https://user:pw-$TOKEN@api.example.invalid/" \
		"INTUTIC_API_URL must not carry credentials: the token goes in INTUTIC_TOKEN" &&
	refused "https://api.example.invalid/?token=$TOKEN" \
		"INTUTIC_API_URL must not carry a query or a fragment: it is the workspace site'\''s address" &&
	refused "https://api.example.invalid/$TOKEN/" \
		"INTUTIC_API_URL holds the value of INTUTIC_TOKEN: the token goes only in INTUTIC_TOKEN" &&
	refused "ftp://api.example.invalid/" \
		"INTUTIC_API_URL must start with https:// (or http:// for a loopback host)" &&
	refused "https://api.example.invalid:99999/" \
		"INTUTIC_API_URL '\''https://api.example.invalid:99999/'\'' is not a URL of the form https://HOST[:PORT][/PATH]: Port number was not a decimal number between 0 and 65535" &&
	refused "https://" \
		"INTUTIC_API_URL '\''https://'\'' is not a URL of the form https://HOST[:PORT][/PATH]: No host part in the URL" &&
	refused "https://api.example.invalid/a b" \
		"INTUTIC_API_URL holds a byte no URL may hold (0x20)"
'

test_expect_success 'a token with a space or a control character is refused, unshown' '
	api "$HTTP_URL" && use_cache c-badtoken &&
	INTUTIC_TOKEN="$TOKEN
X-Injected: 1" &&
	doctor &&
	expect_level "fail: INTUTIC_TOKEN holds a space, a control character or a byte that is not ASCII; fix: correct the setting; until then \`intutic exec\` refuses to run" &&
	INTUTIC_TOKEN="$TOKEN x" &&
	doctor &&
	expect_level "fail: INTUTIC_TOKEN holds a space, a control character or a byte that is not ASCII; fix: correct the setting; until then \`intutic exec\` refuses to run"
'

# --- the token ---------------------------------------------------------------------

test_expect_success 'the token was sent, and is nowhere: output, messages, caches, server logs' '
	test_grep "auth=ok" "$HTTP_LOG" &&
	test_grep "auth=ok" "$HTTPS_LOG" &&
	test_line_count -gt 100 "$ALL" &&
	test_grep -v -F "$TOKEN" "$ALL" &&
	test_grep -v -F "$WRONG_TOKEN" "$ALL" &&
	test_grep -v -F "$TOKEN" "$HTTP_LOG" &&
	! grep -rlF "$TOKEN" "$TRASH_DIRECTORY"/c-* >leaks &&
	test_must_be_empty leaks
'

test_done
