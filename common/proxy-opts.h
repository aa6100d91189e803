/*
 * proxy-opts.h — every option of intutic-proxy, described once.  The proxy
 * parses its command line and prints its usage from it (proxy/main.c);
 * `intutic start` knows from it which of its arguments go to the proxy and
 * which of those take a value (launcher/cmd-start.c).  intutic-proxy(8)
 * lists the same options; t4001 checks its SYNOPSIS against --help.
 *
 *	X(NAME, KIND, FIELD, METAVAR, DEFAULT, MIN, MAX, ENV, HELP)
 *
 * NAME is the option without its dashes.  KIND says how the value is kept
 * in struct proxy_config's FIELD (proxy.h): FLAG (no value; the field is
 * set to 1), TEXT (the string as given), PORT, INT and SIZE (a decimal
 * number from MIN to MAX).  DEFAULT is the field's value when neither the
 * option nor the environment variable ENV (NULL: none) gives one; it is an
 * expression of the proxy's, seen only there.  REQUIRED marks the one
 * option the proxy cannot run without.  HELP is one line for --help; the
 * manual says the rest.
 */
#ifndef INTUTIC_PROXY_OPTS_H
#define INTUTIC_PROXY_OPTS_H

#define PROXY_OPTIONS(X) \
	X("rules", TEXT, rules_path, "FILE", NULL, 0, 0, "INTUTIC_RULES", \
	    "the rule file (required)") \
	X("bind", TEXT, bind_text, "ADDR,...", "127.0.0.1", 0, 0, \
	    "INTUTIC_PROXY_BIND", "addresses to listen on, at most 16") \
	X("port", PORT, port, "N", PROXY_PORT_DEFAULT, 0, 65535, \
	    "INTUTIC_PROXY_PORT", "the port on every address (0: any)") \
	X("audit", TEXT, audit_path, "FILE|-|syslog|journal", NULL, 0, 0, \
	    NULL, "append the audit log to FILE, stderr, syslog, the journal") \
	X("workers", INT, workers, "N", cpus_usable(), 1, PROXY_WORKERS_MAX, \
	    NULL, "worker threads (by default one per usable CPU)") \
	X("state-dir", TEXT, state_dir, "DIR", NULL, 0, 0, NULL, \
	    "where proxy.json and control.sock go") \
	X("control-group", TEXT, control_group, "GROUP", NULL, 0, 0, NULL, \
	    "the group that may use the control socket") \
	X("user", TEXT, user, "NAME", NULL, 0, 0, NULL, \
	    "once listening, run as NAME and its groups (from root)") \
	X("dns-bind", TEXT, dns_bind_text, "ADDR[:PORT],...", NULL, 0, 0, \
	    NULL, "serve the DNS filter there (port 53 by default)") \
	X("transparent-bind", TEXT, transparent_text, "ADDR:PORT,...", NULL, \
	    0, 0, NULL, "take connections nftables redirects there") \
	X("gateway-ca", TEXT, gateway_ca, "FILE", NULL, 0, 0, NULL, \
	    "trust the CA certificates in FILE too (provider gateway)") \
	X("gateway-bind", TEXT, gateway_text, "ADDR:PORT,...", NULL, 0, 0, \
	    NULL, "serve the provider gateway alone there as well") \
	X("gateway-keys", TEXT, gateway_keys, "DIR", NULL, 0, 0, NULL, \
	    "the brokered providers' real keys, one file each (DIR/NAME)") \
	X("upstream-proxy", TEXT, upstream_text, "URL", NULL, 0, 0, NULL, \
	    "reach what is allowed through this parent (http://HOST:PORT)") \
	X("upstream-proxy-auth", TEXT, upstream_auth, "FILE", NULL, 0, 0, \
	    NULL, "the parent's USER:PASSWORD, read from FILE (mode 600)") \
	X("resolv-conf", TEXT, resolv_conf, "FILE", "/etc/resolv.conf", 0, 0, \
	    "INTUTIC_RESOLV_CONF", "the name servers to ask") \
	X("hosts", TEXT, hosts_file, "FILE", "/etc/hosts", 0, 0, \
	    "INTUTIC_HOSTS_FILE", "names answered without a name server") \
	X("require-run", FLAG, require_run, NULL, 0, 0, 1, NULL, \
	    "refuse requests without a run's credentials (407)") \
	X("no-revoke", FLAG, no_revoke, NULL, 0, 0, 1, NULL, \
	    "open connections keep their decision when the rules change") \
	X("debug", FLAG, debug, NULL, 0, 0, 1, NULL, \
	    "log debugging messages too") \
	X("dns-timeout", INT, dns_ms, "MS", PROXY_DNS_MS, 1, 3600000, NULL, \
	    "looking a name up") \
	X("connect-timeout", INT, connect_ms, "MS", PROXY_CONNECT_MS, 1, \
	    3600000, NULL, "connecting to the origin") \
	X("head-timeout", INT, head_ms, "MS", PROXY_HEAD_MS, 1, 3600000, \
	    NULL, "reading a request head") \
	X("peek-timeout", INT, peek_ms, "MS", PROXY_PEEK_MS, 1, 3600000, \
	    NULL, "the client's first bytes after a CONNECT's 200") \
	X("idle-timeout", INT, idle_ms, "MS", PROXY_IDLE_MS, 1, 86400000, \
	    NULL, "a tunnel or an exchange with no traffic") \
	X("grace", INT, grace_ms, "MS", PROXY_GRACE_MS, 0, 3600000, NULL, \
	    "draining after SIGTERM") \
	X("max-conns", SIZE, conns_max, "N", PROXY_CONNS_MAX, 1, 10000000, \
	    NULL, "concurrent client connections") \
	X("head-max", SIZE, head_max, "BYTES", PROXY_HEAD_MAX, 1024, \
	    1024 * 1024, NULL, "a request or response head") \
	X("headers-max", SIZE, headers_max, "N", PROXY_HEADERS_MAX, 1, 256, \
	    NULL, "header lines in a request") \
	X("uri-max", SIZE, uri_max, "BYTES", PROXY_URI_MAX, 64, 1024 * 1024, \
	    NULL, "a request target") \
	X("transit-max", SIZE, transit_max, "BYTES", PROXY_TRANSIT_MAX, 0, \
	    LONG_MAX, NULL, "what one worker's tunnels keep for slow sides")

/* The option the proxy cannot run without. */
#define PROXY_OPTION_REQUIRED	"rules"

#endif /* INTUTIC_PROXY_OPTS_H */
