#!/bin/sh
test_description='--require-run: a request without a run'"'"'s credentials gets 407 with the challenge; git, curl, python, pip and npm under intutic exec are attributed to their run'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"
. "$top_srcdir/t/lib-proxy.sh"
test_isolate_netns
test_require_proxy curl git

test_exec_env

# pip and npm take settings from the environment as well as from files:
# none of the caller's survives here (intutic exec passes only its base
# set anyway), and the tests keep the files out with settings of their own.
for var in $(env | sed -n -e 's/^\(PIP_[A-Za-z0-9_]*\)=.*/\1/p' \
    -e 's/^\([Nn][Pp][Mm]_[Cc][Oo][Nn][Ff][Ii][Gg]_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$var"
done
python3 -m pip --version >/dev/null 2>&1 && test_set_prereq PIP
npm --version >/dev/null 2>&1 && test_set_prereq NPM

# run_exec ARGS...: intutic exec against the test's proxy, stdout in out,
# stderr in err; the exit status in rc.
run_exec () {
	rc=0
	"$INTUTIC" exec --state-dir "$PROXY_DIR/state" "$@" >out 2>err || rc=$?
}

# A bare repository served as files (git's dumb HTTP protocol) by python's
# http.server on loopback: REPO_PORT, stopped at the end.
start_repo () {
	git init -q --bare repo/r.git &&
	git init -q work &&
	git -C work -c user.name=t -c user.email=t@test commit -q --allow-empty -m one &&
	git -C work push -q ../repo/r.git HEAD:refs/heads/main &&
	git -C repo/r.git update-server-info &&
	REPO_PORT=$(free_port) &&
	{ python3 -m http.server --bind 127.0.0.1 --directory repo "$REPO_PORT" \
		</dev/null >repo.log 2>&1 & } &&
	REPO_PID=$! &&
	test_atexit "test_stop_child_ $REPO_PID" &&
	wait_until 10 repo_up
}

# tls-files.py PORT CERT KEY: the files of ./repo over HTTPS (python's
# http.server, the requests logged on stderr).
cat >tls-files.py <<\EOF
import functools, http.server, ssl, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                            directory="repo")
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
EOF

# start_repo_tls: the same repository over HTTPS (tls-files.py, a leaf of
# the test CA's for repo.test): REPO_TLS_PORT, its requests logged in
# repo-tls.log, stopped at the end.
start_repo_tls () {
	test_certs &&
	test_leaf_cert repo repo.test &&
	REPO_TLS_PORT=$(free_port) &&
	{ python3 tls-files.py "$REPO_TLS_PORT" "${CA_FILE%/*}/repo.crt" \
		"${CA_FILE%/*}/repo.key" \
		</dev/null >repo-tls.log 2>&1 & } &&
	REPO_TLS_PID=$! &&
	test_atexit "test_stop_child_ $REPO_TLS_PID" &&
	wait_until 10 repo_tls_up && return 0
	echo "start_repo_tls: the HTTPS repository did not answer; its log:" >&2
	cat repo-tls.log >&2
	return 1
}

# repo_tls_up: the repository's HTTPS server answers (1: not yet).
repo_tls_up () {
	curl -s --noproxy "*" --max-time 5 --cacert "$CA_FILE" -o /dev/null \
		--resolve "repo.test:$REPO_TLS_PORT:127.0.0.1" \
		"https://repo.test:$REPO_TLS_PORT/r.git/info/refs" || return 1
}

# repo_up: the repository's server answers (1: not yet).
repo_up () {
	curl -s --noproxy "*" -o /dev/null "http://127.0.0.1:$REPO_PORT/r.git/info/refs" ||
		return 1
}

# The package both registries serve: intuticdemo, one module.
PKG=intuticdemo
WHEEL=$PKG-1.0-py3-none-any.whl
TARBALL=$PKG-1.0.0.tgz

# make_index DIR: a PEP 503 "simple" index in DIR for one project, $PKG
# 1.0: DIR/packages/$WHEEL, a real wheel (PEP 427: the module and the
# .dist-info's METADATA, WHEEL and RECORD, each file's sha256 in RECORD),
# linked with its sha256 from DIR/simple/$PKG/index.html, the project's
# page, itself listed in DIR/simple/index.html.
make_index () {
	python3 - "$1" "$PKG" "$WHEEL" <<\PY
import base64, hashlib, os, sys, zipfile

top, name, wheel = sys.argv[1:]
info = name + "-1.0.dist-info"
files = {
    name + ".py": b"VALUE = 'from the test index'\n",
    info + "/METADATA": b"Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n"
        % name.encode(),
    info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: intutic-t6006\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    record += "%s,sha256=%s,%d\n" % (path, digest.rstrip(b"=").decode(),
                                     len(data))
files[info + "/RECORD"] = (record + info + "/RECORD,,\n").encode()
os.makedirs(os.path.join(top, "packages"))
os.makedirs(os.path.join(top, "simple", name))
path = os.path.join(top, "packages", wheel)
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
    for member, data in files.items():
        z.writestr(member, data)
with open(path, "rb") as f:
    sha256 = hashlib.sha256(f.read()).hexdigest()
with open(os.path.join(top, "simple", name, "index.html"), "w") as f:
    f.write('<!DOCTYPE html>\n<html><body>\n'
            '<a href="../../packages/%s#sha256=%s">%s</a>\n'
            '</body></html>\n' % (wheel, sha256, wheel))
with open(os.path.join(top, "simple", "index.html"), "w") as f:
    f.write('<!DOCTYPE html>\n<html><body>\n<a href="%s/">%s</a>\n'
            '</body></html>\n' % (name, name))
PY
}

# start_pypi: the index (make_index) served from pypi/ by python's
# http.server as pypi.test on loopback: PYPI_TEST_PORT, its log (a line a
# request) PYPI_TEST_LOG, for server_mark/server_since pypi.test; stopped
# at the end.
start_pypi () {
	make_index pypi &&
	PYPI_TEST_PORT=$(free_port) &&
	PYPI_TEST_LOG=$TRASH_DIRECTORY/pypi.log &&
	{ python3 -m http.server --bind 127.0.0.1 --directory pypi \
		"$PYPI_TEST_PORT" </dev/null >"$PYPI_TEST_LOG" 2>&1 & } &&
	PYPI_PID=$! &&
	test_atexit "test_stop_child_ $PYPI_PID" &&
	wait_until 10 registry_up "$PYPI_TEST_PORT" "/simple/$PKG/"
}

# make_npm DIR PORT: $PKG 1.0.0 as an npm registry on port PORT serves it:
# DIR/$TARBALL, a real npm tarball (gzip'ed tar, package/package.json
# and package/index.js), and DIR/$PKG.json, its packument, whose
# versions["1.0.0"].dist names the tarball's URL on npm.test:PORT, its
# sha1 (shasum) and sha512 (integrity, as SRI).
make_npm () {
	python3 - "$1" "$2" "$PKG" "$TARBALL" <<\PY
import base64, gzip, hashlib, io, json, os, sys, tarfile

top, port, name, tarball = sys.argv[1:]
manifest = {"name": name, "version": "1.0.0", "main": "index.js",
            "description": "intutic test package", "license": "MIT"}
files = {
    "package/package.json": (json.dumps(manifest, indent=2) + "\n").encode(),
    "package/index.js": b"module.exports = 'from the test registry';\n",
}
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
    for member, data in files.items():
        ti = tarfile.TarInfo(member)
        ti.size, ti.mode, ti.mtime = len(data), 0o644, 1577836800
        t.addfile(ti, io.BytesIO(data))
tgz = gzip.compress(raw.getvalue(), mtime=0)
os.makedirs(top)
with open(os.path.join(top, tarball), "wb") as f:
    f.write(tgz)
version = dict(manifest, dist={
    "tarball": "http://npm.test:%s/%s/-/%s" % (port, name, tarball),
    "shasum": hashlib.sha1(tgz).hexdigest(),
    "integrity": "sha512-"
        + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
})
packument = {"name": name, "dist-tags": {"latest": "1.0.0"},
             "versions": {"1.0.0": version}}
with open(os.path.join(top, name + ".json"), "w") as f:
    json.dump(packument, f, indent=2)
PY
}

# The npm registry: GET /NAME answers the packument DIR/NAME.json, GET
# /NAME/-/FILE.tgz the tarball DIR/FILE.tgz, anything else 404; HTTP/1.1
# with keep-alive, an idle connection closed after 30 s.  A line a request
# on stderr, as http.server logs them, and a line "proxy header: NAME" for
# each Proxy-* header that reached it (the proxy must have taken them
# off).  Arguments: PORT DIR.
npm_registry_py='
import http.server, os, sys

port, top = int(sys.argv[1]), sys.argv[2]
routes = {}
for f in os.listdir(top):
    if f.endswith(".json"):
        routes["/" + f[:-5]] = (os.path.join(top, f), "application/json")
    elif f.endswith(".tgz"):
        routes["/%s/-/%s" % (f.rsplit("-", 1)[0], f)] = (
            os.path.join(top, f), "application/octet-stream")

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30

    def do_GET(self):
        for name in self.headers.keys():
            if name.lower().startswith("proxy-"):
                self.log_message("proxy header: %s", name)
        route = routes.get(self.path.split("?", 1)[0])
        if route is None:
            self.send_error(404)
            return
        with open(route[0], "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", route[1])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
'

# start_npm_registry: $PKG (make_npm) served from npm/ by npm_registry_py
# as npm.test on loopback: NPM_TEST_PORT, NPM_TEST_LOG (for server_mark/
# server_since npm.test); stopped at the end.
start_npm_registry () {
	NPM_TEST_PORT=$(free_port) &&
	make_npm npm "$NPM_TEST_PORT" &&
	NPM_TEST_LOG=$TRASH_DIRECTORY/npm.log &&
	{ python3 -c "$npm_registry_py" "$NPM_TEST_PORT" npm \
		</dev/null >"$NPM_TEST_LOG" 2>&1 & } &&
	NPM_PID=$! &&
	test_atexit "test_stop_child_ $NPM_PID" &&
	wait_until 10 registry_up "$NPM_TEST_PORT" "/$PKG"
}

# registry_up PORT PATH: a registry's server answers 200 for PATH (1: not
# yet).
registry_up () {
	test "$(curl -s --noproxy "*" -o /dev/null -w "%{http_code}" \
		"http://127.0.0.1:$1$2")" = 200 || return 1
}

# registry_attributed NAME RUN: what the client under exec fetched from the
# registry NAME (pypi.test, npm.test) since server_mark NAME and
# audit_mark went through the proxy as RUN's, and all of it arrived: the
# registry logged at least one request, each answered 200; there are as
# many decision records since the mark, once every connection is closed,
# and each allows NAME for RUN: nothing without the credentials, no
# challenge (a 407 would be a decision without a run), no other host, and
# nothing the registry got that the proxy did not decide on.  The
# registry's request lines stay in NAME.requests.
registry_attributed () {
	server_since "$1" &&
	{ grep "\"GET " "$1.new" >"$1.requests" || :; } &&
	test_line_count -gt 0 "$1.requests" &&
	{ ! grep -v "\" 200 " "$1.requests" >&2 ||
		{ echo "$1: not every request was answered 200" >&2; return 1; }; } &&
	audit_settle &&
	audit_since 1 &&
	audit_expect 0 event=decision reason=proxy-auth &&
	audit_expect "$(wc -l <"$1.requests")" event=decision &&
	audit_expect "$(wc -l <"$1.requests")" event=decision decision=allow \
		host="$1" run="$2"
}

test_expect_success 'setup: an origin, a git repository over HTTP, a Python package index, an npm registry, the proxy with --require-run' '
	start_origin origin.test &&
	start_repo &&
	start_repo_tls &&
	start_pypi &&
	start_npm_registry &&
	write_hosts hosts origin.test=127.0.0.1 repo.test=127.0.0.1 \
		pypi.test=127.0.0.1 npm.test=127.0.0.1 &&
	cat >rules.yaml <<-EOF &&
	version: 1
	allow:
	  - "origin.test:$ORIGIN_TEST_PORT"
	  - "repo.test:$REPO_PORT,$REPO_TLS_PORT"
	  - "pypi.test:$PYPI_TEST_PORT"
	  - "npm.test:$NPM_TEST_PORT"
	  - "127.0.0.0/8:$ORIGIN_TEST_PORT,$REPO_PORT,$REPO_TLS_PORT,$PYPI_TEST_PORT,$NPM_TEST_PORT"
	EOF
	start_proxy rules.yaml --require-run
'

test_expect_success 'no credentials: 407 with Proxy-Authenticate, denied as proxy-auth, nothing reaches the origin' '
	server_mark origin.test &&
	audit_mark &&
	proxy_curl -D head -o body -w "%{http_code}\n" \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code &&
	echo 407 >expect &&
	test_cmp expect code &&
	test_grep -i "^Proxy-Authenticate: Basic realm=\"intutic\"" head &&
	test_grep "require-run" body &&
	{ proxy_curl -o /dev/null -w "%{http_connect}\n" -p \
		"http://origin.test:$ORIGIN_TEST_PORT/" >code 2>/dev/null || :; } &&
	test_grep "407" code &&
	audit_since 2 &&
	audit_expect 2 event=decision decision=deny reason=proxy-auth run= &&
	server_since origin.test &&
	test_must_be_empty origin.test.new
'

test_expect_success '/healthz and /metrics still answer without credentials' '
	curl -sS --noproxy "*" -o /dev/null -w "%{http_code}\n" "$PROXY_URL/healthz" >code &&
	echo 200 >expect &&
	test_cmp expect code
'

test_expect_success 'git under intutic exec: ls-remote and clone through the proxy, after the challenge, as its run' '
	audit_mark &&
	run_exec -- sh -c "echo \$INTUTIC_RUN >run.id &&
		git ls-remote http://repo.test:$REPO_PORT/r.git &&
		git clone -q http://repo.test:$REPO_PORT/r.git clone" &&
	test "$rc" = 0 &&
	test_grep "refs/heads/main" out &&
	test -d clone/.git &&
	run=$(cat run.id) &&
	audit_since 1 &&
	audit_records event=decision decision=allow host=repo.test >allowed &&
	test_line_count -gt 0 allowed &&
	audit_expect 0 event=decision decision=allow host=repo.test run= &&
	test "$(audit_count event=decision decision=allow host=repo.test run="$run")" = \
		"$(wc -l <allowed)"
'

test_expect_success 'git over https:// under intutic exec: CONNECT after the challenge, as its run; what the repository served arrived' '
	audit_mark &&
	: >repo-tls.log &&
	GIT_SSL_CAINFO=$CA_FILE run_exec -- sh -c "echo \$INTUTIC_RUN >run.id &&
		git ls-remote https://repo.test:$REPO_TLS_PORT/r.git &&
		git clone -q https://repo.test:$REPO_TLS_PORT/r.git clone-tls" &&
	test "$rc" = 0 &&
	test_grep "refs/heads/main" out &&
	test -d clone-tls/.git &&
	test_grep "GET /r.git/info/refs" repo-tls.log &&
	run=$(cat run.id) &&
	audit_since 1 &&
	audit_records event=decision decision=allow host=repo.test proto=connect >allowed &&
	test_line_count -gt 0 allowed &&
	audit_expect 0 event=decision decision=allow host=repo.test run= &&
	test "$(audit_count event=decision decision=allow host=repo.test proto=connect run="$run")" = \
		"$(wc -l <allowed)"
'

test_expect_success 'curl and python under intutic exec: their requests carry the run' '
	audit_mark &&
	run_exec -- sh -c "echo \$INTUTIC_RUN >run.id &&
		curl -sS -o /dev/null -w \"%{http_code}\n\" http://origin.test:$ORIGIN_TEST_PORT/ &&
		python3 -c \"import urllib.request; print(urllib.request.urlopen(\\\"http://origin.test:$ORIGIN_TEST_PORT/\\\").status)\"" &&
	test "$rc" = 0 &&
	printf "200\n200\n" >expect &&
	test_cmp expect out &&
	audit_since 2 &&
	audit_expect 2 event=decision decision=allow host=origin.test run="$(cat run.id)"
'

# pip takes the credentials from its proxy URL (the environment's, through
# requests) and sends them with every request, unasked: requests never
# answers a 407, so a challenge would be the end of it.  Its settings
# keep it to this index: no configuration file (PIP_CONFIG_FILE=/dev/null
# reads none), no cache, no version check, no prompt; the index is plain
# HTTP, so pypi.test is named a trusted host (else pip ignores it).
test_expect_success PIP 'pip under intutic exec: download and install from the index, every request its run'"'"'s, credentials sent unasked' '
	server_mark pypi.test &&
	audit_mark &&
	index=http://pypi.test:$PYPI_TEST_PORT/simple/ &&
	run_exec -- env PIP_CONFIG_FILE=/dev/null PIP_NO_INPUT=1 sh -c "
		echo \$INTUTIC_RUN >run.id &&
		python3 -m pip download --no-deps --no-cache-dir \
			--disable-pip-version-check --index-url $index \
			--trusted-host pypi.test $PKG -d pip-dl &&
		python3 -m pip install --no-deps --no-cache-dir \
			--disable-pip-version-check --index-url $index \
			--trusted-host pypi.test --target pip-site $PKG" &&
	test "$rc" = 0 &&
	cmp pypi/packages/$WHEEL pip-dl/$WHEEL &&
	test_grep "from the test index" pip-site/$PKG.py &&
	test_path_is_dir pip-site/$PKG-1.0.dist-info &&
	registry_attributed pypi.test "$(cat run.id)" &&
	test_grep -F "\"GET /simple/$PKG/ HTTP/1.1\" 200" pypi.test.requests &&
	test_grep -F "\"GET /packages/$WHEEL HTTP/1.1\" 200" pypi.test.requests
'

# npm finds the proxy without being told: its proxy and https-proxy
# settings stay null (npm config get says so here), and its HTTP agent
# takes the proxy from the environment, https_proxy first, then
# http_proxy, then proxy, in either case, and sends that URL's
# credentials with every request, unasked.  No --proxy: the audit records
# show that npm used the proxy.  Its settings keep it to this registry: no
# user or global configuration file (npm refuses /dev/null for both: a
# file that does not exist for the global one), its own cache in the
# scratch directory, no audit, no funding message, no update check.
test_expect_success NPM 'npm under intutic exec: pack and install from the registry, every request its run'"'"'s, credentials sent unasked' '
	server_mark npm.test &&
	audit_mark &&
	registry=http://npm.test:$NPM_TEST_PORT/ &&
	mkdir npm-out &&
	run_exec -- env npm_config_userconfig=/dev/null \
		npm_config_globalconfig="$TRASH_DIRECTORY/no-global-npmrc" \
		npm_config_cache="$TRASH_DIRECTORY/npm-cache" \
		npm_config_audit=false npm_config_fund=false \
		npm_config_update_notifier=false npm_config_progress=false \
		sh -c "
		echo \$INTUTIC_RUN >run.id &&
		npm config get proxy https-proxy >npm-config &&
		npm pack $PKG@1.0.0 --registry $registry \
			--pack-destination npm-out &&
		npm install --prefix npm-site $PKG --registry $registry" &&
	test "$rc" = 0 &&
	printf "proxy=null\nhttps-proxy=null\n" >expect &&
	test_cmp expect npm-config &&
	cmp npm/$TARBALL npm-out/$TARBALL &&
	test_grep "from the test registry" npm-site/node_modules/$PKG/index.js &&
	registry_attributed npm.test "$(cat run.id)" &&
	test_grep -F "\"GET /$PKG HTTP/1.1\" 200" npm.test.requests &&
	test_grep -F "\"GET /$PKG/-/$TARBALL HTTP/1.1\" 200" npm.test.requests &&
	test_grep -v "proxy header" npm.test.new
'

test_done
