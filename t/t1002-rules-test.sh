#!/bin/sh
test_description='rules test: decisions, reasons, deciding entries and exit codes'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"

# The rule files are t/data/rules/cli/*.yaml and the shipped default.yaml.
# `rules test` prints the deciding entry as FILE:LINE with FILE as given on
# the command line, so it runs in the files' directory with relative names.
# The source tree may be read-only: only ./out and ./err are written, here.

CLI=$TEST_DATA/rules/cli

# rules_test FILE HOST [ADDRESS...] — in $CLI; output in ./out and ./err.
rules_test () {
	(cd "$CLI" && exec "$INTUTIC" rules test "$@") >out 2>err
}

# shipped_test HOST [ADDRESS...] — with the shipped default.yaml.
shipped_test () {
	(cd "$top_srcdir/rules" && exec "$INTUTIC" rules test default.yaml "$@") \
		>out 2>err
}

# shipped_line TEXT — the line of agents.yaml (which default.yaml includes)
# whose entry is exactly TEXT.
shipped_line () {
	grep -n -x -F -e "  - $1" -e "  - \"$1\"" "$top_srcdir/rules/agents.yaml" >lines &&
	test_line_count = 1 lines &&
	sed 's/:.*//' lines
}

# --- allowed ------------------------------------------------------------------

test_expect_success 'an exact name is allowed on a default port: exit 0' '
	rules_test basic.yaml api.example.com &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:5 (allow api.example.com)
	EOF
	test_cmp expect out &&
	test_must_be_empty err
'

test_expect_success 'the host is canonicalised: case and one trailing dot' '
	rules_test basic.yaml API.Example.COM. &&
	cat >expect <<-\EOF &&
	host:     API.Example.COM.
	as:       api.example.com:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:5 (allow api.example.com)
	EOF
	test_cmp expect out
'

test_expect_success '*.name allows names below it, one label or more' '
	rules_test basic.yaml x.cdn.example.com &&
	test_grep "^rule:     basic\.yaml:6 \(allow \*\.cdn\.example\.com\)\$" out &&
	rules_test basic.yaml a.b.cdn.example.com &&
	cat >expect <<-\EOF &&
	host:     a.b.cdn.example.com
	as:       a.b.cdn.example.com:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:6 (allow *.cdn.example.com)
	EOF
	test_cmp expect out
'

test_expect_success '**.name allows the name itself and names below it' '
	rules_test basic.yaml pkg.example.org &&
	test_grep "^rule:     basic\.yaml:7 \(allow \*\*\.pkg\.example\.org\)\$" out &&
	rules_test basic.yaml a.pkg.example.org &&
	test_grep "^rule:     basic\.yaml:7 \(allow \*\*\.pkg\.example\.org\)\$" out
'

test_expect_success 'an entry with its own port allows that port' '
	rules_test basic.yaml git.example.com:22 &&
	cat >expect <<-\EOF &&
	host:     git.example.com:22
	as:       git.example.com:22
	decision: allow
	reason:   allowed
	rule:     basic.yaml:8 (allow git.example.com:22)
	EOF
	test_cmp expect out &&
	rules_test basic.yaml www.example.net:8080 &&
	test_grep "^rule:     basic\.yaml:9 \(allow www\.example\.net:80,8080\)\$" out
'

test_expect_success 'an entry of an included file names that file' '
	rules_test basic.yaml extra.example.com &&
	cat >expect <<-\EOF &&
	host:     extra.example.com
	as:       extra.example.com:443
	decision: allow
	reason:   allowed
	rule:     inc/extra.yaml:4 (allow extra.example.com)
	EOF
	test_cmp expect out
'

# --- denied -----------------------------------------------------------------

test_expect_success 'a deny entry wins over an allow entry: denied, exit 1' '
	test_expect_code 1 rules_test basic.yaml secret.cdn.example.com &&
	cat >expect <<-\EOF &&
	host:     secret.cdn.example.com
	as:       secret.cdn.example.com:443
	decision: deny
	reason:   denied
	rule:     basic.yaml:13 (deny secret.cdn.example.com)
	EOF
	test_cmp expect out &&
	test_must_be_empty err
'

test_expect_success 'a name no entry matches: not-allowlisted, exit 1' '
	test_expect_code 1 rules_test basic.yaml other.example.com &&
	cat >expect <<-\EOF &&
	host:     other.example.com
	as:       other.example.com:443
	decision: deny
	reason:   not-allowlisted
	rule:     -
	EOF
	test_cmp expect out
'

test_expect_success '*.name does not allow the name itself' '
	test_expect_code 1 rules_test basic.yaml cdn.example.com &&
	test_grep "^reason:   not-allowlisted\$" out
'

test_expect_success 'a port not in ports: is port-not-allowed, naming the entry' '
	test_expect_code 1 rules_test basic.yaml api.example.com:80 &&
	cat >expect <<-\EOF &&
	host:     api.example.com:80
	as:       api.example.com:80
	decision: deny
	reason:   port-not-allowed
	rule:     basic.yaml:5 (allow api.example.com)
	EOF
	test_cmp expect out
'

test_expect_success 'an entry with its own port allows no other port' '
	test_expect_code 1 rules_test basic.yaml git.example.com &&
	cat >expect <<-\EOF &&
	host:     git.example.com
	as:       git.example.com:443
	decision: deny
	reason:   port-not-allowed
	rule:     basic.yaml:8 (allow git.example.com:22)
	EOF
	test_cmp expect out
'

# --- invalid hosts --------------------------------------------------------------

test_expect_success 'invalid host 127.1 (inet_aton shorthand): exit 1' '
	test_expect_code 1 rules_test basic.yaml 127.1 &&
	cat >expect <<-\EOF &&
	host:     127.1
	decision: deny
	reason:   invalid-host (not an IPv4 address in dotted-quad form: write four decimal numbers 0-255 without leading zeros)
	EOF
	test_cmp expect out &&
	test_must_be_empty err
'

test_expect_success 'invalid host [fe80::1%eth0] (a zone id): exit 1' '
	test_expect_code 1 rules_test basic.yaml "[fe80::1%eth0]" &&
	cat >expect <<-\EOF &&
	host:     [fe80::1%eth0]
	decision: deny
	reason:   invalid-host (IPv6 zone ids ('\''%...'\'') are not allowed)
	EOF
	test_cmp expect out
'

test_expect_success 'invalid host: a non-ASCII name: exit 1' '
	host=$(printf "b\303\274cher.de") &&
	test_expect_code 1 rules_test basic.yaml "$host" &&
	{
		printf "host:     %s\n" "$host" &&
		echo "decision: deny" &&
		echo "reason:   invalid-host (non-ASCII name: write its A-label form (xn--...))"
	} >expect &&
	test_cmp expect out
'

test_expect_success 'invalid port 0: exit 1' '
	test_expect_code 1 rules_test basic.yaml api.example.com:0 &&
	cat >expect <<-\EOF &&
	host:     api.example.com:0
	decision: deny
	reason:   invalid-host (port must be a decimal number from 1 to 65535)
	EOF
	test_cmp expect out
'

# --- IP literal hosts ---------------------------------------------------------

test_expect_success 'an IPv4 host in an allow CIDR: allowed, with its class' '
	rules_test basic.yaml 192.0.2.5 &&
	cat >expect <<-\EOF &&
	host:     192.0.2.5
	as:       192.0.2.5:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:10 (allow 192.0.2.0/24)
	class:    documentation
	EOF
	test_cmp expect out
'

test_expect_success 'an IPv4 host in a deny CIDR inside an allow CIDR: denied' '
	test_expect_code 1 rules_test basic.yaml 192.0.2.66 &&
	cat >expect <<-\EOF &&
	host:     192.0.2.66
	as:       192.0.2.66:443
	decision: deny
	reason:   denied
	rule:     basic.yaml:14 (deny 192.0.2.66/32)
	class:    documentation
	EOF
	test_cmp expect out
'

test_expect_success 'a private IPv4 host no entry names: not-allowlisted, class private' '
	test_expect_code 1 rules_test basic.yaml 10.0.0.1 &&
	cat >expect <<-\EOF &&
	host:     10.0.0.1
	as:       10.0.0.1:443
	decision: deny
	reason:   not-allowlisted
	rule:     -
	class:    private
	EOF
	test_cmp expect out
'

test_expect_success 'an IPv6 host with a port is canonicalised' '
	rules_test basic.yaml "[2001:DB8:1:0::5]:443" &&
	cat >expect <<-\EOF &&
	host:     [2001:DB8:1:0::5]:443
	as:       [2001:db8:1::5]:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:11 (allow [2001:db8:1::]/48)
	class:    documentation
	EOF
	test_cmp expect out
'

# --- resolved addresses ------------------------------------------------------

test_expect_success 'a private address of an allowed name: internal-address, exit 1' '
	test_expect_code 1 rules_test basic.yaml api.example.com 10.1.2.3 &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: deny
	reason:   internal-address
	rule:     -
	address:  10.1.2.3 private: deny internal-address
	EOF
	test_cmp expect out
'

test_expect_success 'public addresses of an allowed name: the first is dialled, exit 0' '
	rules_test basic.yaml api.example.com 9.9.9.9 2001:4860::1 &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:5 (allow api.example.com)
	dial:     9.9.9.9
	address:  9.9.9.9 public: allow allowed
	address:  2001:4860::1 public (not checked: the proxy dials 9.9.9.9)
	EOF
	test_cmp expect out
'

test_expect_success 'a public address, then an internal one: the public one is dialled, exit 0' '
	rules_test basic.yaml api.example.com 9.9.9.9 10.1.2.3 &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:5 (allow api.example.com)
	dial:     9.9.9.9
	address:  9.9.9.9 public: allow allowed
	address:  10.1.2.3 private (not checked: the proxy dials 9.9.9.9)
	EOF
	test_cmp expect out
'

test_expect_success 'an internal address, then a public one: refused, the public one dialled, exit 0' '
	rules_test basic.yaml api.example.com 10.1.2.3 9.9.9.9 &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:5 (allow api.example.com)
	dial:     9.9.9.9
	address:  10.1.2.3 private: deny internal-address
	address:  9.9.9.9 public: allow allowed
	EOF
	test_cmp expect out
'

test_expect_success 'every address refused: denied by the first, each named with why, exit 1' '
	test_expect_code 1 rules_test basic.yaml api.example.com \
		10.1.2.3 192.0.2.66 127.0.0.1 &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: deny
	reason:   internal-address
	rule:     -
	address:  10.1.2.3 private: deny internal-address
	address:  192.0.2.66 documentation: deny denied by basic.yaml:14 (deny 192.0.2.66/32)
	address:  127.0.0.1 loopback: deny internal-address
	EOF
	test_cmp expect out
'

test_expect_success 'every address refused, a deny block first: denied with its entry' '
	test_expect_code 1 rules_test basic.yaml api.example.com 192.0.2.66 10.1.2.3 &&
	test_grep "^reason:   denied\$" out &&
	test_grep "^rule:     basic\.yaml:14 \(deny 192\.0\.2\.66/32\)\$" out &&
	test_grep -v "^dial:" out
'

test_expect_success 'IPv4 addresses are considered before IPv6 ones, as the proxy resolves' '
	rules_test basic.yaml api.example.com 2001:4860::1 10.1.2.3 9.9.9.9 &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: allow
	reason:   allowed
	rule:     basic.yaml:5 (allow api.example.com)
	dial:     9.9.9.9
	address:  10.1.2.3 private: deny internal-address
	address:  9.9.9.9 public: allow allowed
	address:  2001:4860::1 public (not checked: the proxy dials 9.9.9.9)
	EOF
	test_cmp expect out &&
	rules_test basic.yaml api.example.com 2001:4860::1 10.1.2.3 &&
	test_grep "^dial:     2001:4860::1\$" out &&
	test_grep "^address:  2001:4860::1 public: allow allowed\$" out
'

test_expect_success 'an internal address an allow CIDR covers is allowed, naming the CIDR' '
	rules_test basic.yaml api.example.com 192.0.2.7 &&
	test_grep "^decision: allow\$" out &&
	test_grep "^dial:     192\.0\.2\.7\$" out &&
	test_grep "^address:  192\.0\.2\.7 documentation: allow allowed by basic\.yaml:10 \(allow 192\.0\.2\.0/24\)\$" out
'

test_expect_success 'IPv4 embedded in IPv6 is classified as that IPv4 address' '
	test_expect_code 1 rules_test basic.yaml api.example.com \
		::ffff:10.0.0.1 64:ff9b::a00:1 2002:a00:1::1 &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: deny
	reason:   internal-address
	rule:     -
	address:  ::ffff:10.0.0.1 private via ipv4-mapped: deny internal-address
	address:  64:ff9b::a00:1 private via nat64: deny internal-address
	address:  2002:a00:1::1 private via 6to4: deny internal-address
	EOF
	test_cmp expect out
'

# --- the shipped default.yaml -------------------------------------------------

test_expect_success 'default.yaml: ::ffff:169.254.169.254 meets the metadata deny CIDR' '
	line=$(shipped_line 169.254.169.254/32) &&
	test_expect_code 1 shipped_test api.anthropic.com ::ffff:169.254.169.254 &&
	cat >expect <<-EOF &&
	host:     api.anthropic.com
	as:       api.anthropic.com:443
	decision: deny
	reason:   denied
	rule:     agents.yaml:$line (deny 169.254.169.254/32)
	address:  ::ffff:169.254.169.254 link-local via ipv4-mapped: deny denied by agents.yaml:$line (deny 169.254.169.254/32)
	EOF
	test_cmp expect out
'

test_expect_success 'default.yaml: the metadata address as an IPv6 host is denied too' '
	line=$(shipped_line 169.254.169.254/32) &&
	test_expect_code 1 shipped_test "[::ffff:169.254.169.254]" &&
	test_grep "^reason:   denied\$" out &&
	test_grep "^rule:     agents\.yaml:$line \(deny 169\.254\.169\.254/32\)\$" out &&
	test_grep "^class:    link-local via ipv4-mapped\$" out
'

test_expect_success 'default.yaml: a provider host from providers.yaml is allowed' '
	shipped_test api.anthropic.com 9.9.9.9 &&
	test_grep "^decision: allow\$" out &&
	test_grep "^rule:     providers\.yaml:[0-9]+ \(allow api\.anthropic\.com\)\$" out
'

test_expect_success 'default.yaml: github.com:22 is allowed, a paste host is denied' '
	line=$(shipped_line github.com:22) &&
	shipped_test github.com:22 &&
	test_grep "^rule:     agents\.yaml:$line \(allow github\.com:22\)\$" out &&
	line=$(shipped_line gist.github.com) &&
	test_expect_code 1 shipped_test gist.github.com &&
	test_grep "^rule:     agents\.yaml:$line \(deny gist\.github\.com\)\$" out
'

# --- report mode ----------------------------------------------------------------

test_expect_success 'report mode: a denial says the proxy would let it through; exit 1' '
	test_expect_code 1 rules_test report.yaml other.example.com &&
	cat >expect <<-\EOF &&
	host:     other.example.com
	as:       other.example.com:443
	decision: deny
	reason:   not-allowlisted
	rule:     -
	mode:     report (the proxy would log this denial and let the connection through)
	EOF
	test_cmp expect out
'

test_expect_success 'report mode: an allowed host has no mode line' '
	rules_test report.yaml api.example.com &&
	test_grep "^decision: allow\$" out &&
	test_grep -v "^mode:" out
'

# --- exit 2 -----------------------------------------------------------------------

test_expect_success 'a rule file that does not load: its error, exit 2' '
	test_expect_code 2 rules_test does-not-load.yaml api.example.com &&
	test_must_be_empty out &&
	echo "does-not-load.yaml:4:5: allow entry '\''*'\'': a wildcard alone would allow every name: name a domain ('\''*.example.com'\'')" >expect &&
	test_cmp expect err
'

test_expect_success 'a missing rule file: exit 2' '
	test_expect_code 2 rules_test no-such-file.yaml api.example.com &&
	test_must_be_empty out &&
	echo "no-such-file.yaml: cannot read: No such file or directory" >expect &&
	test_cmp expect err
'

test_expect_success 'usage: HOST missing: exit 2' '
	test_expect_code 2 rules_test basic.yaml &&
	test_must_be_empty out &&
	cat >expect <<-\EOF &&
	intutic: rules test: expected FILE and HOST[:PORT]
	intutic: see intutic rules --help
	EOF
	test_cmp expect err
'

test_expect_success 'usage: FILE and HOST missing: exit 2' '
	test_expect_code 2 rules_test &&
	test_must_be_empty out &&
	test_grep "^intutic: rules test: expected FILE and HOST\[:PORT\]\$" err
'

test_expect_success 'usage: a bad ADDRESS: exit 2, nothing decided' '
	test_expect_code 2 rules_test basic.yaml api.example.com 9.9.9.9 10.0.0.256 &&
	test_must_be_empty out &&
	test_grep "^intutic: rules test: address '\''10\.0\.0\.256'\'': not an IPv4 address in dotted-quad form" err &&
	test_line_count = 2 err
'

test_expect_success 'usage: a bad ADDRESS is found before the rule file is read' '
	test_expect_code 2 rules_test no-such-file.yaml api.example.com fe80::1%eth0 &&
	test_must_be_empty out &&
	test_grep "^intutic: rules test: address '\''fe80::1%eth0'\'': IPv6 zone ids" err &&
	test_grep -v "cannot read" err
'

test_expect_success 'usage: an unknown option: exit 2' '
	test_expect_code 2 rules_test --bogus basic.yaml api.example.com &&
	test_must_be_empty out &&
	test_grep "^intutic: rules: unknown option '\''--bogus'\''\$" err &&
	test_expect_code 2 rules_test basic.yaml api.example.com -x &&
	test_must_be_empty out &&
	test_grep "^intutic: rules: unknown option '\''-x'\''\$" err
'

test_expect_success 'an ADDRESS may be written in brackets, and embedded IPv4 is named' '
	test_expect_code 1 shipped_test github.com "[::ffff:10.0.0.1]" 10.0.0.2 &&
	test_grep "^decision: deny\$" out &&
	test_grep "^reason:   internal-address\$" out &&
	test_grep "^address:  \[::ffff:10\.0\.0\.1\] private via ipv4-mapped: deny internal-address\$" out &&
	test_grep "^address:  10\.0\.0\.2 private: deny internal-address\$" out &&
	shipped_test github.com "[::ffff:10.0.0.1]" 1.2.3.4 &&
	test_grep "^dial:     1\.2\.3\.4\$" out &&
	test_grep "^address:  \[::ffff:10\.0\.0\.1\] private via ipv4-mapped \(not checked: the proxy dials 1\.2\.3\.4\)\$" out
'

test_expect_success 'addresses of a denied host are classified, not checked' '
	test_expect_code 1 shipped_test not-listed.example 1.2.3.4 &&
	test_grep "^reason:   not-allowlisted\$" out &&
	test_grep -v "^dial:" out &&
	test_grep "^address:  1\.2\.3\.4 public \(not checked: the host is denied\)\$" out
'

test_expect_success 'addresses after an IP-literal host are not checked: the proxy dials the literal' '
	rules_test basic.yaml 192.0.2.5 10.1.2.3 &&
	test_grep "^decision: allow\$" out &&
	test_grep -v "^dial:" out &&
	test_grep "^address:  10\.1\.2\.3 private \(not checked: the host is an address\)\$" out
'

test_expect_success 'report mode: a denied name is resolved all the same: the first allowed address is dialled' '
	test_expect_code 1 rules_test report.yaml other.example.com 10.0.0.1 1.2.3.4 &&
	cat >expect <<-\EOF &&
	host:     other.example.com
	as:       other.example.com:443
	decision: deny
	reason:   not-allowlisted
	rule:     -
	dial:     1.2.3.4
	mode:     report (the proxy would log this denial and let the connection through)
	address:  10.0.0.1 private: deny internal-address
	address:  1.2.3.4 public: allow allowed
	EOF
	test_cmp expect out
'

test_expect_success 'report mode: an allowed name whose addresses are all refused: the first is dialled' '
	test_expect_code 1 rules_test report.yaml api.example.com fe80::1 10.0.0.1 127.0.0.1 &&
	cat >expect <<-\EOF &&
	host:     api.example.com
	as:       api.example.com:443
	decision: deny
	reason:   internal-address
	rule:     -
	dial:     10.0.0.1
	mode:     report (the proxy would log this denial and let the connection through)
	address:  10.0.0.1 private: deny internal-address
	address:  127.0.0.1 loopback: deny internal-address
	address:  fe80::1 link-local: deny internal-address
	EOF
	test_cmp expect out
'

test_expect_success 'usage: more than 32 ADDRESS operands: exit 2, nothing decided' '
	set -- &&
	for i in $(seq 1 33); do set -- "$@" "10.0.0.$i"; done &&
	test_expect_code 2 rules_test basic.yaml api.example.com "$@" &&
	test_must_be_empty out &&
	test_grep "^intutic: rules test: 33 addresses: give at most 32 " err &&
	shift &&
	test_expect_code 1 rules_test basic.yaml api.example.com "$@" &&
	test "$(grep -c "^address:  10\.0\.0\.[0-9]* private: deny internal-address\$" out)" = 32
'

# --- --json -------------------------------------------------------------------

# json_text [FILE...]: rules test --json's object in each FILE (default
# out) as the lines rules test prints without it, by the mapping of
# intutic(1) RULES TEST AS JSON, into FILE.text (json.text for out), after
# its members and their types were checked.  One python3 for them all.
json_text () {
	cat >json_text.py <<-\EOF &&
	import json, sys
	def lines(text):
	    assert text.count("\n") == 1 and text.endswith("}\n"), "not one line"
	    j = json.loads(text)
	    out = []
	    assert list(j) == ["host", "run", "as", "decision", "reason", "error",
	        "rule", "class", "via", "dial", "mode", "addresses"], list(j)
	    assert j["run"] is None
	    assert j["decision"] in ("allow", "deny") and j["mode"] in ("enforce",
	        "report"), j
	    def entry(e):
	        assert e is None or list(e) == ["where", "kind", "entry"], e
	        return None if e is None else "%s (%s %s)" % (e["where"],
	            e["kind"], e["entry"])
	    def cls(o):
	        return o["class"] + ("" if o["via"] is None else " via " + o["via"])
	    out.append("host:     " + j["host"])
	    if j["as"] is None:
	        assert j["decision"] == "deny" and j["error"] and not j["addresses"]
	        out.append("decision: deny")
	        out.append("reason:   %s (%s)" % (j["reason"], j["error"]))
	        return out
	    assert j["error"] is None
	    out.append("as:       " + j["as"])
	    out.append("decision: " + j["decision"])
	    out.append("reason:   " + j["reason"])
	    out.append("rule:     " + (entry(j["rule"]) or "-"))
	    if j["class"] is not None:
	        out.append("class:    " + cls(j))
	    if j["dial"] is not None:
	        out.append("dial:     " + j["dial"])
	    if j["decision"] == "deny" and j["mode"] == "report":
	        out.append("mode:     report (the proxy would log this denial and let "
	            "the connection through)")
	    for a in j["addresses"]:
	        assert list(a) == ["address", "class", "via", "checked", "decision",
	            "reason", "rule", "not_checked"], a
	        line = "address:  %s %s" % (a["address"], cls(a))
	        if a["checked"]:
	            assert a["not_checked"] is None, a
	            line += ": %s %s" % (a["decision"], a["reason"])
	            if a["rule"] is not None:
	                line += " by " + entry(a["rule"])
	        else:
	            assert a["decision"] is None and a["reason"] is None, a
	            line += " (not checked: %s)" % a["not_checked"]
	        out.append(line)
	    return out
	for name in sys.argv[1:] or ["out"]:
	    dest = "json.text" if name == "out" else name + ".text"
	    try:
	        got = lines(open(name).read())
	    except AssertionError as e:
	        sys.exit("%s: %s" % (name, e))
	    with open(dest, "w") as f:
	        f.write("".join(l + "\n" for l in got))
	EOF
	python3 json_text.py "$@"
}

test_expect_success '--json: every kind of answer is the lines without it, as one object; the exit status the same' '
	cat >cases <<-\EOF &&
	basic.yaml api.example.com
	basic.yaml API.Example.COM.
	basic.yaml secret.cdn.example.com
	basic.yaml other.example.com 1.2.3.4
	basic.yaml api.example.com:80
	basic.yaml git.example.com:22
	basic.yaml 127.1
	basic.yaml [fe80::1%eth0]
	basic.yaml 192.0.2.5 10.1.2.3
	basic.yaml 192.0.2.66
	basic.yaml [2001:DB8:1:0::5]:443
	basic.yaml [::ffff:10.0.0.1]
	basic.yaml api.example.com 192.0.2.66 10.1.2.3
	basic.yaml api.example.com 9.9.9.9 2001:4860::1
	basic.yaml api.example.com 2001:4860::1 10.1.2.3 9.9.9.9
	basic.yaml api.example.com [::ffff:10.0.0.1] 9.9.9.9
	basic.yaml api.example.com [::ffff:10.0.0.1]
	report.yaml other.example.com 10.0.0.1 1.2.3.4
	report.yaml api.example.com fe80::1 10.0.0.1 127.0.0.1
	report.yaml api.example.com
	EOF
	n=0 &&
	while read -r file host rest; do
		n=$((n + 1)) &&
		# shellcheck disable=SC2086 # the addresses are words
		{ rules_test "$file" "$host" $rest; echo $? >case$n.code; } &&
		test_must_be_empty err &&
		mv out case$n.lines &&
		# shellcheck disable=SC2086
		{ rules_test --json "$file" "$host" $rest; echo $? >case$n.jcode; } &&
		test_must_be_empty err &&
		mv out case$n.json || return 1
	done <cases &&
	test "$n" = 20 &&
	json_text $(seq -f "case%g.json" 1 20) &&
	for i in $(seq 1 20); do
		test_cmp case$i.lines case$i.json.text &&
		test_cmp case$i.code case$i.jcode ||
			{ echo "case $i: $(sed -n "${i}p" cases)" >&2; return 1; }
	done
'

test_expect_success '--json: --json anywhere before --; usage errors still lines on stderr, exit 2' '
	rules_test basic.yaml --json api.example.com &&
	json_text &&
	test_grep "^decision: allow\$" json.text &&
	test_expect_code 2 rules_test --json basic.yaml &&
	test_must_be_empty out &&
	test_grep "^intutic: rules test: expected FILE and HOST\[:PORT\]\$" err &&
	test_expect_code 2 rules_test --json does-not-load.yaml api.example.com &&
	test_must_be_empty out &&
	(cd "$CLI" && test_expect_code 2 "$INTUTIC" rules check --json basic.yaml) >out 2>err &&
	test_must_be_empty out &&
	test_grep "^intutic: rules: --json goes with .rules test. only\$" err
'

test_done
