/*
 * wire.h — the names the proxy and the launcher exchange, defined once:
 * the keys of the proxy's state file (the proxy writes it, intutic start,
 * stop, status, doctor and enforce read it), the metric names `intutic
 * status` reads from /metrics, and the fields of a run's registration
 * (intutic exec sends it, the proxy reads it).  A name changed here changes
 * on both sides at once.
 */
#ifndef INTUTIC_WIRE_H
#define INTUTIC_WIRE_H

/* DIR/proxy.json (intutic-proxy(8), STATE FILE). */
#define WIRE_STATE_PID		"pid"
#define WIRE_STATE_PORT		"port"
#define WIRE_STATE_BIND		"bind"
#define WIRE_STATE_RULES	"rules"
#define WIRE_STATE_AUDIT	"audit"
#define WIRE_STATE_CONTROL	"control"	/* the control socket's path */
#define WIRE_STATE_DNS		"dns"	/* the DNS filter's "ADDR:PORT"s */
/* the transparent listeners' "ADDR:PORT"s */
#define WIRE_STATE_TRANSPARENT	"transparent"
#define WIRE_STATE_GATEWAY	"gateway"	/* --gateway-bind addresses */
#define WIRE_STATE_STARTED	"started"
#define WIRE_STATE_WORKERS	"workers"
#define WIRE_STATE_VERSION	"version"

/* /metrics: the samples `intutic status` shows. */
#define WIRE_METRIC_CONNS_TOTAL		"intutic_connections_total"
#define WIRE_METRIC_CONNS_ACTIVE	"intutic_connections_active"
#define WIRE_METRIC_TUNNELS_ACTIVE	"intutic_tunnels_active"
#define WIRE_METRIC_DECISIONS		"intutic_decisions_total"
#define WIRE_METRIC_RELOADS		"intutic_reloads_total"
#define WIRE_METRIC_RELOAD_ERRORS	"intutic_reload_errors_total"
#define WIRE_METRIC_UPTIME		"intutic_uptime_seconds"

/* POST /v1/runs (on the control socket): a run's registration, one JSON
 * object. */
#define WIRE_RUN_ID		"run"
#define WIRE_RUN_TOKEN		"token"
#define WIRE_RUN_COMMAND	"command"
#define WIRE_RUN_PROJECT	"project"
#define WIRE_RUN_PID		"pid"
#define WIRE_RUN_POLICY		"policy"	/* a rule document, as text */
#define WIRE_RUN_SENTINELS	"sentinels"	/* answer: brokered keys, by provider */
#define WIRE_RUN_ADDR		"addr"		/* its sandbox's address */
/* What the policy is named as, in messages and as its entries' file:
 * an entry of it decides as "run RUN's policy:LINE" (a printf format of
 * the run's id). */
#define WIRE_RUN_POLICY_NAME	"run %s's policy"
/* PUT /v1/runs/RUN/policy: "policy", and the generation it replaces. */
#define WIRE_RUN_GENERATION	"generation"
/* ... and what the control API says of a run besides (GET /v1/runs). */
#define WIRE_RUN_UID		"uid"
#define WIRE_RUN_REGISTERED	"registered"
#define WIRE_RUN_REQUESTS	"requests"
#define WIRE_RUN_DENIALS	"denials"
#define WIRE_RUN_BYTES_UP	"bytes_up"
#define WIRE_RUN_BYTES_DOWN	"bytes_down"
#define WIRE_RUN_LAST_DENIALS	"last_denials"	/* GET /v1/runs/RUN only */
#define WIRE_DENIAL_TIME	"time"
#define WIRE_DENIAL_HOST	"host"
#define WIRE_DENIAL_PORT	"port"
#define WIRE_DENIAL_REASON	"reason"
#define WIRE_DENIAL_RULE	"rule"
/* ... and what the proxy keeps of it in DIR/runs.json besides. */
#define WIRE_RUN_PID_START	"pid_start"
#define WIRE_RUN_MAC		"mac"
#define WIRE_RUNS_LIST		"runs"		/* GET /v1/runs: the array */

/* DIR/control.sock: the proxy's control API (intutic-proxy(8)).  An error
 * is {"error": MESSAGE} with its status. */
#define WIRE_CONTROL_ERROR	"error"
#define WIRE_CONTROL_SOCKET	"control.sock"
#define WIRE_RUNS_PATH		"/v1/runs"
#define WIRE_RUN_POLICY_PATH	"/policy"	/* after /v1/runs/RUN */
#define WIRE_RUN_ADDR_PATH	"/addr"		/* after /v1/runs/RUN */
/* GET /v1/rules: the operator's rules, {"generation":N,"path":P,"rules":R,
 * "where":W} (R a rule document as JSON text, rules_dump(); W the file:line
 * of each of its entries, in R's order, rules_dump_where()). */
#define WIRE_RULES_PATH		"/v1/rules"
#define WIRE_RULES_GENERATION	"generation"
#define WIRE_RULES_FILE		"path"
#define WIRE_RULES_TEXT		"rules"
#define WIRE_RULES_WHERE	"where"

#endif /* INTUTIC_WIRE_H */
