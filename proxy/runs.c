/*
 * runs.c — the registered runs (see runs.h).
 *
 * An array of at most RUNS_MAX runs under one lock: a registration takes
 * the next free slot, an end moves the last run into the one it frees.
 * Two hash indexes find a run by id (a request's credentials) and by its
 * sandbox's address (a sandbox's connection) in about one probe, whatever
 * the number of runs.  A token is kept only as its MAC
 * (HMAC-SHA256 under a key of the state directory's, DIR/runs.key), and
 * every change is written to DIR/runs.json (a temporary file renamed)
 * before it is made and answered, so that a proxy started again knows the
 * runs whose launchers still live, with their policies.
 *
 * Changes take `change` for their whole length, the table's lock only to
 * read it and, once the file is written, to make the change: the file
 * (written and synced with the lock free) never holds what the table does
 * not, and a check never waits for a disk.
 *
 * A run is its own object, reference counted: the table holds one
 * reference, each connection of the run another.  Its policy and end are
 * under its own lock; its counters are atomics.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <yaml.h>

#include "crypto.h"
#include "hash.h"
#include "jsonw.h"
#include "paths.h"
#include "rules.h"
#include "runrec.h"
#include "yread.h"
#include "wire.h"

#include "runs.h"

#define RUNS_KEY_BYTES		32	/* the MAC's key */
#define RUNS_INDEX		(RUNS_MAX * 2)	/* entries of an index: 2^n */
#define RUNS_MAC_BYTES		CRYPTO_MAC_BYTES	/* HMAC-SHA256 */
#define RUNS_FILE_MAX		(RUNS_MAX * (3 * 1024 + 2 * RUN_POLICY_MAX))	/* runs.json */

/* One of a run's last denials. */
struct run_denial {
	time_t		 when;
	char		 host[RULES_HOST_TEXT_MAX];
	int		 port;
	char		 reason[32];
	char		 rule[RULES_WHERE_MAX < 512 ? RULES_WHERE_MAX : 512];
};

/*
 * What a run's listing shows and no request reads: apart, so that the
 * runs themselves stay small and close together (struct run).
 */
struct run_about {
	char			 command[RUN_COMMAND_MAX];
	char			 project[RUN_PROJECT_MAX];
	struct run_denial	 last[RUN_DENIALS_MAX];	/* a ring */
	size_t			 nlast;
};

/*
 * A run.  What a request of the run touches comes first, together (a few
 * cache lines: with many runs, each request may find its run's cold); what
 * is only listed or written down follows, the most of it apart (struct
 * run_about): a run is a few hundred bytes, and a thousand of them share
 * a few dozen pages, not a page or two each.
 */
struct run {
	int			 refs;		/* atomic */
	size_t			 at;		/* its slot (the table's lock) */
	size_t			 idlen;
	char			 id[RUN_ID_MAX];
	unsigned char		 mac[RUNS_MAC_BYTES];	/* of its token */
	struct rules_addr	 addr;		/* its sandbox's; family 0 */
	uint64_t		 requests;	/* atomics */
	uint64_t		 denials;
	uint64_t		 bytes_up;
	uint64_t		 bytes_down;
	pthread_mutex_t		 lock;		/* policy, ended, about's last */
	struct run_policy	 policy;
	int			 ended;

	long long		 pid;
	unsigned long long	 pid_start;	/* its start time; 0: unknown */
	uid_t			 uid;
	time_t			 registered;
	struct run_about	*about;
};

/*
 * A slot of an index: the run, and its policy's compiled set, which a
 * request can then ask for together with the run, from the slot alone
 * (index_id_prefetch()).  Written with atomic stores (the lock held), as
 * the prefetch reads them without it.
 */
struct runs_slot {
	struct run		*run;
	const struct rules	*policy;	/* a hint: only ever prefetched */
};

struct runs {
	pthread_mutex_t	 change;	/* one change at a time, file and all */
	pthread_mutex_t	 lock;		/* the slots and the indexes */
	struct run	**slot;		/* RUNS_MAX */
	size_t		 used;
	/* The runs by id and by address: open addressing, linear probing. */
	struct runs_slot *by_id;	/* RUNS_INDEX */
	struct runs_slot *by_addr;	/* RUNS_INDEX */
	uint64_t	 seed;		/* the indexes' hash key */
	unsigned char	 key[RUNS_KEY_BYTES];
	struct crypto_key *mackey;	/* key, ready for its MACs */
	char		 path[PATH_MAX];	/* runs.json; "": kept nowhere */
	runs_compile_fn	 compile;
	void		*compile_arg;
	runs_gone_fn	 gone;		/* told of each run swept */
	void		*gone_arg;
	uint64_t	 changes;	/* runs added or dropped (atomic) */
};

static unsigned long long	proc_start(long long pid);
static int			sandbox_addr(const char *s, struct rules_addr *a);
static void			runs_put(struct runs *r, struct run *run);
static void			runs_drop(struct runs *r, size_t i);
/* A change about to be made to one run, as runs_write() writes it. */
struct run_change {
	const struct run	*run;
	const struct run_policy	*pol;	/* its new policy; NULL: as it is */
	const struct rules_addr	*addr;	/* its new address; NULL: as it is */
};

static int			runs_write(struct runs *r, const struct run *skip,
				    struct run *add,
				    const struct run_change *chg);

/* The MAC of a token under the table's key. */
static int
runs_mac(const struct runs *r, const char *token, size_t len,
    unsigned char mac[RUNS_MAC_BYTES])
{
	return crypto_mac_key(r->mackey, token, len, mac);
}

/* The table's key made ready for its MACs: 0, or -1 and why. */
static int
runs_mackey(struct runs *r, char *why, size_t whylen)
{
	if ((r->mackey = crypto_key_new(r->key, sizeof(r->key))) != NULL)
		return 0;
	snprintf(why, whylen, "libcrypto has no HMAC-SHA256 for the runs' "
	    "tokens, or memory ran out");
	return -1;
}

/*
 * DIR/runs.key: read, or made (random, mode 0600) when missing.  0, or -1
 * and why.
 */
static int
runs_key(struct runs *r, const char *dir, char *why, size_t whylen)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/runs.key", dir) >=
	    (int)sizeof(path)) {
		snprintf(why, whylen, "the state directory's path is too long");
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) != -1) {
		n = read(fd, r->key, sizeof(r->key));
		close(fd);
		if (n == (ssize_t)sizeof(r->key))
			return 0;
		snprintf(why, whylen, "'%s' is not a key of %d bytes: remove "
		    "it (the runs it kept are then forgotten)", path,
		    RUNS_KEY_BYTES);
		return -1;
	}
	if (errno != ENOENT || crypto_random(r->key, sizeof(r->key)) != 0 ||
	    (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) ==
	    -1) {
		snprintf(why, whylen, "cannot make '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	n = write(fd, r->key, sizeof(r->key));
	if (n != (ssize_t)sizeof(r->key) || fsync(fd) != 0) {
		snprintf(why, whylen, "cannot write '%s': %s", path,
		    strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}

/* A new run: one reference, the table's. */
static struct run *
run_new(void)
{
	struct run *run;

	if ((run = calloc(1, sizeof(*run))) == NULL)
		return NULL;
	if ((run->about = calloc(1, sizeof(*run->about))) == NULL) {
		free(run);
		return NULL;
	}
	run->refs = 1;
	pthread_mutex_init(&run->lock, NULL);
	return run;
}

void
run_release(struct run *run)
{
	if (run == NULL ||
	    __atomic_sub_fetch(&run->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	rules_free(run->policy.set);
	free(run->policy.text);
	pthread_mutex_destroy(&run->lock);
	free(run->about);
	explicit_bzero(run, sizeof(*run));
	free(run);
}

const char *
run_id(const struct run *run)
{
	return run->id;
}

/*
 * A policy from its text (NULL: none) through the table's compiler: 0,
 * or -1 and why.  The text is copied.
 */
static int
runs_policy_make(struct runs *r, const char *id, const char *text,
    struct run_policy *pol, char *why, size_t whylen)
{
	memset(pol, 0, sizeof(*pol));
	pol->generation = 1;
	if (text == NULL)
		return 0;
	if ((pol->text = strdup(text)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (r->compile(id, text, &pol->set, why, whylen, r->compile_arg) != 0) {
		free(pol->text);
		pol->text = NULL;
		return -1;
	}
	return 0;
}

/*
 * DIR/runs.json, the runs a proxy before this one kept: those whose
 * launcher still lives (the same pid with the same start time) come back,
 * with their policies compiled again (a run whose policy no longer
 * compiles does not: its requests are refused, never let through under
 * the operator's rules alone).  A missing file is none.  0, or -1 and why.
 */
static int
runs_load(struct runs *r, char *why, size_t whylen)
{
	struct runrec *recs = NULL;
	struct run *run;
	struct stat st;
	size_t i, n = 0;
	char *buf, skipwhy[256];
	ssize_t got;
	int fd;

	if ((fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, whylen, "cannot read '%s': %s", r->path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || st.st_size > RUNS_FILE_MAX ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(why, whylen, "cannot read '%s': too large, or out of "
		    "memory", r->path);
		close(fd);
		return -1;
	}
	got = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (got != (ssize_t)st.st_size) {
		snprintf(why, whylen, "cannot read '%s'", r->path);
		free(buf);
		return -1;
	}
	buf[got] = '\0';
	if (runrec_parse(r->path, buf, (size_t)got, 1, &recs, &n, why,
	    whylen) != 0) {
		free(buf);
		return -1;
	}
	free(buf);
	for (i = 0; i < n && r->used < RUNS_MAX; i++) {
		const struct runrec *rec = &recs[i];

		if (!runs_id_valid(rec->id, strlen(rec->id)) ||
		    strlen(rec->command) >= RUN_COMMAND_MAX ||
		    strlen(rec->project) >= RUN_PROJECT_MAX ||
		    rec->pid <= 0 || rec->pid_start <= 0 ||
		    rec->generation <= 0 ||
		    proc_start(rec->pid) != (unsigned long long)rec->pid_start)
			continue;	/* its launcher is gone */
		if ((run = run_new()) == NULL)
			break;
		if (crypto_unhex(rec->mac, run->mac, sizeof(run->mac)) != 0 ||
		    runs_policy_make(r, rec->id, rec->policy, &run->policy,
		    skipwhy, sizeof(skipwhy)) != 0) {
			run_release(run);
			continue;
		}
		run->policy.generation = (unsigned long long)rec->generation;
		snprintf(run->id, sizeof(run->id), "%s", rec->id);
		run->idlen = strlen(run->id);
		memcpy(run->about->command, rec->command,
		    strlen(rec->command) + 1);
		memcpy(run->about->project, rec->project,
		    strlen(rec->project) + 1);
		run->pid = rec->pid;
		run->pid_start = (unsigned long long)rec->pid_start;
		run->uid = (uid_t)rec->uid;
		run->registered = (time_t)rec->registered;
		if (rec->addr[0] != '\0' &&
		    sandbox_addr(rec->addr, &run->addr) != 0) {
			run_release(run);
			continue;
		}
		runs_put(r, run);
	}
	runrec_free(recs, n);
	return 0;
}

struct runs *
runs_new(const char *dir, runs_compile_fn compile, void *arg, char *why,
    size_t whylen)
{
	struct runs *r;

	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->slot = calloc(RUNS_MAX, sizeof(*r->slot))) == NULL ||
	    (r->by_id = calloc(RUNS_INDEX, sizeof(*r->by_id))) == NULL ||
	    (r->by_addr = calloc(RUNS_INDEX, sizeof(*r->by_addr))) == NULL) {
		if (r != NULL) {
			free(r->slot);
			free(r->by_id);
		}
		free(r);
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->change, NULL);
	pthread_mutex_init(&r->lock, NULL);
	r->compile = compile;
	r->compile_arg = arg;
	if (crypto_random(&r->seed, sizeof(r->seed)) != 0)
		snprintf(why, whylen, "no random bytes for the runs' index");
	else if (dir == NULL) {
		if (crypto_random(r->key, sizeof(r->key)) == 0 &&
		    runs_mackey(r, why, whylen) == 0)
			return r;
		if (why[0] == '\0')
			snprintf(why, whylen, "no random bytes for a key");
	} else if (snprintf(r->path, sizeof(r->path), "%s/runs.json", dir) >=
	    (int)sizeof(r->path))
		snprintf(why, whylen, "the state directory's path is too long");
	else if (paths_mkdirs(dir) != 0)
		snprintf(why, whylen, "cannot create the state directory "
		    "'%s': %s", dir, strerror(errno));
	else if (runs_key(r, dir, why, whylen) == 0 &&
	    runs_mackey(r, why, whylen) == 0 && runs_load(r, why, whylen) == 0 &&
	    runs_write(r, NULL, NULL, NULL) == 0)
		return r;
	else if (why[0] == '\0')
		snprintf(why, whylen, "cannot write '%s': %s", r->path,
		    strerror(errno));
	runs_free(r);
	return NULL;
}

void
runs_free(struct runs *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->used; i++)
		run_release(r->slot[i]);
	explicit_bzero(r->key, sizeof(r->key));
	crypto_key_free(r->mackey);
	free(r->slot);
	free(r->by_id);
	free(r->by_addr);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->change);
	free(r);
}

int
runs_id_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len >= RUN_ID_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
		    ch == '.'))
			return 0;
	}
	return 1;
}

static int
token_valid(const char *s, size_t len)
{
	size_t i;

	if (len < RUN_TOKEN_MIN || len > RUN_TOKEN_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Printable text without control bytes. */
static int
text_valid(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

enum reg_key { KEY_NONE, KEY_RUN, KEY_TOKEN, KEY_COMMAND, KEY_PROJECT,
    KEY_PID, KEY_POLICY, KEY_GENERATION, KEY_ADDR };

/*
 * A sandbox's address: an IPv4 or IPv6 address that is neither loopback
 * nor unspecified (a connection from loopback is never a sandbox's).  0,
 * or -1.
 */
static int
sandbox_addr(const char *s, struct rules_addr *a)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

	if (rules_addr_parse(s, a) != RULES_OK)
		return -1;
	if (a->family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&a->v6)) {
		struct in_addr v4;	/* as a peer is; v4 and v6 share */

		memcpy(&v4, &a->v6.s6_addr[12], 4);
		a->v4 = v4;
		a->family = AF_INET;
	}
	if (strcmp(rules_addr_class(a, NULL), "loopback") == 0 ||
	    (a->family == AF_INET && a->v4.s_addr == INADDR_ANY) ||
	    (a->family == AF_INET6 && memcmp(&a->v6, &any6, 16) == 0)) {
		memset(a, 0, sizeof(*a));
		return -1;
	}
	return 0;
}

/* A positive number: 0, or -1. */
static int
reg_number(const char *v, size_t len, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(v, &end, 10);
	return len == 0 || end != v + len || errno != 0 || *out <= 0 ? -1 : 0;
}

/* Stores the value of `key`; 0, or -1 and why. */
static int
reg_value(struct run_reg *reg, enum reg_key key, const char *v, size_t len,
    int is_null, char *why, size_t whylen)
{
	char buf[64];

	switch (key) {
	case KEY_RUN:
		if (is_null || !runs_id_valid(v, len)) {
			snprintf(why, whylen, "\"run\" must be 1 to %d letters, "
			    "digits, '-', '_' or '.'", RUN_ID_MAX - 1);
			return -1;
		}
		memcpy(reg->id, v, len);
		reg->id[len] = '\0';
		return 0;
	case KEY_TOKEN:
		if (is_null || !token_valid(v, len)) {
			snprintf(why, whylen, "\"token\" must be %d to %d "
			    "lowercase hex digits", RUN_TOKEN_MIN, RUN_TOKEN_MAX);
			return -1;
		}
		memcpy(reg->token, v, len);
		reg->token[len] = '\0';
		return 0;
	case KEY_COMMAND:
		if (is_null || len == 0 || len >= sizeof(reg->command) ||
		    !text_valid(v, len)) {
			snprintf(why, whylen, "\"command\" must be a name of 1 "
			    "to %zu printable bytes", sizeof(reg->command) - 1);
			return -1;
		}
		memcpy(reg->command, v, len);
		reg->command[len] = '\0';
		return 0;
	case KEY_PROJECT:
		if (is_null) {
			reg->project[0] = '\0';
			return 0;
		}
		if (len == 0 || len >= sizeof(reg->project) ||
		    !text_valid(v, len)) {
			snprintf(why, whylen, "\"project\" must be null or a "
			    "path of 1 to %zu printable bytes",
			    sizeof(reg->project) - 1);
			return -1;
		}
		memcpy(reg->project, v, len);
		reg->project[len] = '\0';
		return 0;
	case KEY_PID:
		if (is_null) {
			reg->pid = -1;
			return 0;
		}
		if (reg_number(v, len, &reg->pid) != 0) {
			snprintf(why, whylen, "\"pid\" must be null or a "
			    "positive number");
			return -1;
		}
		return 0;
	case KEY_POLICY:
		if (is_null)
			return 0;
		if (len == 0 || len > RUN_POLICY_MAX ||
		    memchr(v, '\0', len) != NULL) {
			snprintf(why, whylen, "\"policy\" must be null or a rule "
			    "document (intutic-rules(5)) of 1 to %d bytes, as "
			    "a string", RUN_POLICY_MAX);
			return -1;
		}
		if ((reg->policy = strndup(v, len)) == NULL) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		return 0;
	case KEY_ADDR:
		if (is_null)
			return 0;
		if (len >= 64 || memchr(v, '\0', len) != NULL ||
		    (memcpy(buf, v, len), buf[len] = '\0',
		    sandbox_addr(buf, &reg->addr) != 0)) {
			snprintf(why, whylen, "\"addr\" must be null or the "
			    "address of the run's sandbox: IPv4 or IPv6, not "
			    "loopback or unspecified");
			return -1;
		}
		return 0;
	case KEY_GENERATION:
		if (is_null || reg_number(v, len, &reg->generation) != 0) {
			snprintf(why, whylen, "\"generation\" must be the "
			    "policy's generation, a positive number");
			return -1;
		}
		return 0;
	case KEY_NONE:
		break;
	}
	return 0;
}

/* The keys: reg_keys[i] is enum reg_key i + 1 (KEY_NONE has none). */
static const char *const reg_keys[] = {
	WIRE_RUN_ID,		/* KEY_RUN */
	WIRE_RUN_TOKEN,		/* KEY_TOKEN */
	WIRE_RUN_COMMAND,	/* KEY_COMMAND */
	WIRE_RUN_PROJECT,	/* KEY_PROJECT */
	WIRE_RUN_PID,		/* KEY_PID */
	WIRE_RUN_POLICY,	/* KEY_POLICY */
	WIRE_RUN_GENERATION,	/* KEY_GENERATION */
	WIRE_RUN_ADDR,		/* KEY_ADDR */
};
#define REG_KEYS	((int)(sizeof(reg_keys) / sizeof(reg_keys[0])))

struct reg_parse {
	struct run_reg	*reg;
	enum runs_body	 what;
};

/* The keys each body takes: a bit for each enum reg_key. */
static const unsigned int reg_takes[] = {
	[RUNS_BODY_REG] = 1u << KEY_RUN | 1u << KEY_TOKEN | 1u << KEY_COMMAND |
	    1u << KEY_PROJECT | 1u << KEY_PID | 1u << KEY_POLICY |
	    1u << KEY_ADDR,
	[RUNS_BODY_POLICY] = 1u << KEY_GENERATION | 1u << KEY_POLICY,
	[RUNS_BODY_ADDR] = 1u << KEY_ADDR,
};
static const unsigned int reg_needs[] = {
	[RUNS_BODY_REG] = 1u << KEY_RUN | 1u << KEY_TOKEN | 1u << KEY_COMMAND,
	[RUNS_BODY_POLICY] = 1u << KEY_GENERATION | 1u << KEY_POLICY,
	[RUNS_BODY_ADDR] = 1u << KEY_ADDR,
};
static const char *const reg_what[] = {
	[RUNS_BODY_REG] = "the registration",
	[RUNS_BODY_POLICY] = "the change",
	[RUNS_BODY_ADDR] = "the address",
};
static const char *const reg_needs_text[] = {
	[RUNS_BODY_REG] = "\"run\", \"token\" and \"command\" are required",
	[RUNS_BODY_POLICY] = "\"generation\" and \"policy\" are required",
	[RUNS_BODY_ADDR] = "\"addr\" is required",
};

/* The object's pairs: known keys once, each a scalar; others skipped. */
static int
reg_map(struct yread *p, void *arg)
{
	struct reg_parse *rp = arg;
	struct run_reg *reg = rp->reg;
	const yaml_event_t *ev = &p->ev;
	char other[YREAD_QUOTE_BUF], why[256];
	enum reg_key key;
	unsigned int seen = 0;
	int k;

	for (;;) {
		if (yread_next(p) != 0)
			return -1;
		if (ev->type == YAML_MAPPING_END_EVENT)
			break;
		if ((k = yread_key(p, reg_keys, REG_KEYS, other,
		    sizeof(other))) < 0)
			return -1;
		if (k == REG_KEYS) {
			if (yread_next(p) != 0 || yread_skip(p) != 0)
				return -1;
			continue;
		}
		key = (enum reg_key)(k + 1);
		if (seen & (1u << key))
			return yread_fail(p, &ev->start_mark, "\"%s\" is given "
			    "twice", reg_keys[k]);
		if (!(reg_takes[rp->what] & (1u << key)))
			return yread_fail(p, &ev->start_mark, "\"%s\" does not "
			    "belong in %s", reg_keys[k], reg_what[rp->what]);
		seen |= 1u << key;
		if (yread_next(p) != 0)
			return -1;
		if (ev->type != YAML_SCALAR_EVENT)
			return yread_fail(p, &ev->start_mark, "\"%s\" is not "
			    "a string, a number or null", reg_keys[k]);
		if (reg_value(reg, key, (const char *)ev->data.scalar.value,
		    ev->data.scalar.length, yread_is_null(p), why,
		    sizeof(why)) != 0)
			return yread_fail(p, &ev->start_mark, "%s", why);
	}
	if ((seen & reg_needs[rp->what]) != reg_needs[rp->what] ||
	    (rp->what == RUNS_BODY_ADDR && reg->addr.family == 0))
		return yread_fail(p, NULL, "%s", reg_needs_text[rp->what]);
	return 0;
}

void
run_reg_clear(struct run_reg *reg)
{
	explicit_bzero(reg->token, sizeof(reg->token));
	free(reg->policy);
	reg->policy = NULL;
}

/*
 * One JSON object, read with the one YAML/JSON event reader in JSON mode
 * (common/yread.h): anything nested where a scalar is expected, repeated
 * or missing is refused; keys it does not know are skipped.
 */
int
runs_parse(const char *body, size_t len, enum runs_body what,
    struct run_reg *reg, char *why, size_t whylen)
{
	struct reg_parse rp = { .reg = reg, .what = what };
	struct yread p;
	int r;

	memset(reg, 0, sizeof(*reg));
	reg->pid = -1;
	reg->generation = -1;
	if (len > RUNS_BODY_MAX) {
		snprintf(why, whylen, "%s is larger than %d bytes",
		    reg_what[what], RUNS_BODY_MAX);
		return -1;
	}
	yread_init(&p, reg_what[what], YREAD_TEXT, 1, body, len, why, whylen);
	r = yread_run(&p, reg_map, &rp);
	if (r != 0)
		run_reg_clear(reg);
	return r;
}

/*
 * The start time of process pid (field 22 of /proc/PID/stat, in clock
 * ticks since boot): with the pid, it names one process for good.  0 when
 * there is no such process.
 */
static unsigned long long
proc_start(long long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	size_t n;
	FILE *fp;
	int field;

	snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
	if (pid <= 0 || (fp = fopen(path, "re")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	/* the command, field 2, is in parentheses and may hold anything */
	if ((p = strrchr(buf, ')')) == NULL)
		return 0;
	for (field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p != NULL)
		start = strtoull(p + 1, NULL, 10);
	return start;
}

/* The run's launcher is gone: its pid names no process, or another one. */
static int
launcher_gone(long long pid, unsigned long long pid_start)
{
	return pid > 0 && pid_start != 0 && proc_start(pid) != pid_start;
}

/*
 * The indexes: a request with credentials looks its run up by id, one from
 * a sandbox by address, among as many as RUNS_MAX runs, in about one
 * probe.  The hash (FNV-1a) is keyed with a secret of the table's, so
 * that ids chosen to collide do not make a run's lookups long.
 */

/* Where the probe for key[0..n) starts. */
static size_t
index_home(const struct runs *r, const void *key, size_t n)
{
	return hash_slot(hash_on(hash_seed(r->seed), key, n), RUNS_INDEX);
}

/* An address as the bytes the index hashes. */
static const void *
addr_key(const struct rules_addr *a, size_t *n)
{
	if (a->family == AF_INET) {
		*n = sizeof(a->v4);
		return &a->v4;
	}
	*n = sizeof(a->v6);
	return &a->v6;
}

/* Where run's probe starts in the index by id, or by address. */
static size_t
run_home(const struct runs *r, const struct run *run, int by_addr)
{
	const void *key;
	size_t n;

	if (!by_addr)
		return index_home(r, run->id, run->idlen);
	key = addr_key(&run->addr, &n);
	return index_home(r, key, n);
}

/* Sets a slot (under the lock). */
static void
slot_set(struct runs_slot *s, struct run *run, const struct rules *policy)
{
	__atomic_store_n(&s->run, run, __ATOMIC_RELAXED);
	__atomic_store_n(&s->policy, policy, __ATOMIC_RELAXED);
}

/* Puts run in an index (under the lock; it has room: RUNS_INDEX > RUNS_MAX). */
static void
index_put(struct runs *r, struct runs_slot *tab, struct run *run, int by_addr)
{
	size_t i = run_home(r, run, by_addr);

	while (tab[i].run != NULL)
		i = (i + 1) & (RUNS_INDEX - 1);
	slot_set(&tab[i], run, run->policy.set);
}

/* The slot of run in an index (under the lock), or NULL. */
static struct runs_slot *
index_slot(struct runs *r, struct runs_slot *tab, const struct run *run,
    int by_addr)
{
	size_t i = run_home(r, run, by_addr);

	while (tab[i].run != run) {
		if (tab[i].run == NULL)
			return NULL;
		i = (i + 1) & (RUNS_INDEX - 1);
	}
	return &tab[i];
}

/*
 * Takes run out of an index (under the lock), the entries after it moved
 * back so that no probe stops short (no tombstones).
 */
static void
index_del(struct runs *r, struct runs_slot *tab, const struct run *run,
    int by_addr)
{
	struct runs_slot *s = index_slot(r, tab, run, by_addr);
	size_t i, j, k;

	if (s == NULL)
		return;
	for (i = j = (size_t)(s - tab);;) {
		j = (j + 1) & (RUNS_INDEX - 1);
		if (tab[j].run == NULL)
			break;
		k = run_home(r, tab[j].run, by_addr);
		/* tab[j] stays when its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		slot_set(&tab[i], tab[j].run, tab[j].policy);
		i = j;
	}
	slot_set(&tab[i], NULL, NULL);
}

/* Points run's slots at its policy now (under `change`). */
static void
runs_hint(struct runs *r, struct run *run)
{
	struct runs_slot *s;

	pthread_mutex_lock(&r->lock);
	if ((s = index_slot(r, r->by_id, run, 0)) != NULL)
		slot_set(s, run, run->policy.set);
	if (run->addr.family != 0 &&
	    (s = index_slot(r, r->by_addr, run, 1)) != NULL)
		slot_set(s, run, run->policy.set);
	pthread_mutex_unlock(&r->lock);
}

void
run_prefetch(const struct run *run)
{
	const char *p = (const char *)run;
	size_t off;

	for (off = 0; off < offsetof(struct run, pid); off += 64)
		__builtin_prefetch(p + off);
}

/*
 * Asks for the run that id[0..len) most likely names, and its policy, to
 * come in, without the lock and without reading either (a prefetch of
 * memory freed meanwhile does nothing): its token's MAC is worked out
 * while they come.
 */
static void
index_id_prefetch(const struct runs *r, const char *id, size_t len)
{
	const struct runs_slot *s = &r->by_id[index_home(r, id, len)];
	const struct rules *policy;
	const struct run *run;

	if ((run = __atomic_load_n(&s->run, __ATOMIC_RELAXED)) == NULL)
		return;
	run_prefetch(run);
	if ((policy = __atomic_load_n(&s->policy, __ATOMIC_RELAXED)) != NULL)
		rules_prefetch_blind(policy);
}

void
runs_prefetch_id(struct runs *r, const char *id, size_t len)
{
	if (runs_id_valid(id, len))
		__builtin_prefetch(&r->by_id[index_home(r, id, len)]);
}

/* The run of id[0..len) (under the lock), or NULL. */
static struct run *
index_id(const struct runs *r, const char *id, size_t len)
{
	size_t i = index_home(r, id, len);
	struct run *run;

	while ((run = r->by_id[i].run) != NULL) {
		if (run->idlen == len && memcmp(run->id, id, len) == 0)
			return run;
		i = (i + 1) & (RUNS_INDEX - 1);
	}
	return NULL;
}

/* Whether two addresses are the same one. */
static int
addr_equal(const struct rules_addr *a, const struct rules_addr *b)
{
	if (a->family != b->family)
		return 0;
	if (a->family == AF_INET)
		return a->v4.s_addr == b->v4.s_addr;
	return a->family == AF_INET6 && memcmp(&a->v6, &b->v6, 16) == 0;
}

/* The run whose sandbox has address a (under the lock), or NULL. */
static struct run *
index_addr(const struct runs *r, const struct rules_addr *a)
{
	struct run *run;
	const void *key;
	size_t i, n;

	if (a->family != AF_INET && a->family != AF_INET6)
		return NULL;
	key = addr_key(a, &n);
	i = index_home(r, key, n);
	while ((run = r->by_addr[i].run) != NULL) {
		if (addr_equal(&run->addr, a))
			return run;
		i = (i + 1) & (RUNS_INDEX - 1);
	}
	return NULL;
}

/* Puts run in the next slot and the indexes (under the lock). */
static void
runs_put(struct runs *r, struct run *run)
{
	run->at = r->used;
	r->slot[r->used++] = run;
	__atomic_add_fetch(&r->changes, 1, __ATOMIC_RELEASE);
	index_put(r, r->by_id, run, 0);
	if (run->addr.family != 0)
		index_put(r, r->by_addr, run, 1);
}

/*
 * Forgets slot i (under the lock): the run has ended (its connections see
 * it), the table's reference goes, the last run moves into the slot.
 */
static void
runs_drop(struct runs *r, size_t i)
{
	struct run *run = r->slot[i];

	pthread_mutex_lock(&run->lock);
	run->ended = 1;
	pthread_mutex_unlock(&run->lock);
	index_del(r, r->by_id, run, 0);
	if (run->addr.family != 0)
		index_del(r, r->by_addr, run, 1);
	__atomic_add_fetch(&r->changes, 1, __ATOMIC_RELEASE);
	r->used--;
	r->slot[i] = r->slot[r->used];
	r->slot[i]->at = i;
	r->slot[r->used] = NULL;
	run_release(run);
}

/* The slot of run id (under the lock); -1: none. */
static ssize_t
runs_find(const struct runs *r, const char *id)
{
	struct run *run = index_id(r, id, strlen(id));

	return run != NULL ? (ssize_t)run->at : -1;
}

/*
 * Ends the runs whose launcher is gone (under `change`; the table's lock
 * is not held while /proc is read).  How many ended.
 */
static size_t
runs_sweep(struct runs *r)
{
	struct run **runs;
	size_t i, n, gone = 0;
	ssize_t k;

	pthread_mutex_lock(&r->lock);
	n = r->used;
	if ((runs = calloc(n + 1, sizeof(*runs))) != NULL)
		for (i = 0; i < n; i++) {
			runs[i] = r->slot[i];
			__atomic_add_fetch(&runs[i]->refs, 1, __ATOMIC_RELAXED);
		}
	pthread_mutex_unlock(&r->lock);
	if (runs == NULL)
		return 0;
	for (i = 0; i < n; i++) {
		if (launcher_gone(runs[i]->pid, runs[i]->pid_start)) {
			pthread_mutex_lock(&r->lock);
			if ((k = runs_find(r, runs[i]->id)) >= 0 &&
			    r->slot[k] == runs[i]) {
				if (r->gone != NULL)
					r->gone(runs[i]->id, runs[i]->pid,
					    r->gone_arg);
				runs_drop(r, (size_t)k);
				gone++;
			}
			pthread_mutex_unlock(&r->lock);
		}
		run_release(runs[i]);
	}
	free(runs);
	return gone;
}

/* The slot of the run whose sandbox has address a (under the lock); -1. */
static ssize_t
runs_addr_slot(const struct runs *r, const struct rules_addr *a)
{
	struct run *run = index_addr(r, a);

	return run != NULL ? (ssize_t)run->at : -1;
}

void
runs_on_gone(struct runs *r, runs_gone_fn fn, void *arg)
{
	r->gone = fn;
	r->gone_arg = arg;
}

size_t
runs_sweep_gone(struct runs *r)
{
	size_t n;

	pthread_mutex_lock(&r->change);
	n = runs_sweep(r);
	pthread_mutex_unlock(&r->change);
	return n;
}

struct run *
runs_by_addr(struct runs *r, const struct rules_addr *a)
{
	struct run *run = NULL;
	ssize_t i;

	pthread_mutex_lock(&r->lock);
	if ((i = runs_addr_slot(r, a)) >= 0) {
		run = r->slot[i];
		__atomic_add_fetch(&run->refs, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&r->lock);
	return run;
}

/* How many runs uid owns (under the lock). */
static size_t
runs_of(const struct runs *r, uid_t uid)
{
	size_t i, n = 0;

	for (i = 0; i < r->used; i++)
		if (r->slot[i]->uid == uid)
			n++;
	return n;
}

/* Whether a run of uid fits (under the lock): RUNS_ADDED or why not. */
static enum runs_added
runs_room(const struct runs *r, uid_t uid)
{
	if (r->used == RUNS_MAX)
		return RUNS_FULL;
	if (runs_of(r, uid) >= RUNS_PER_USER_MAX)
		return RUNS_USER_FULL;
	return RUNS_ADDED;
}

enum runs_added
runs_add(struct runs *r, struct run_reg *reg, struct rules *set)
{
	unsigned long long start = 0;
	enum runs_added room;
	struct run *run;

	if (reg->pid > 0 && (start = proc_start(reg->pid)) == 0)
		return RUNS_NO_PID;
	if ((run = run_new()) == NULL)
		return RUNS_NOT_KEPT;
	if (runs_mac(r, reg->token, strlen(reg->token), run->mac) != 0) {
		run_release(run);
		return RUNS_NOT_KEPT;
	}
	snprintf(run->id, sizeof(run->id), "%s", reg->id);
	run->idlen = strlen(run->id);
	snprintf(run->about->command, sizeof(run->about->command), "%s",
	    reg->command);
	snprintf(run->about->project, sizeof(run->about->project), "%s",
	    reg->project);
	run->pid = reg->pid;
	run->pid_start = start;
	run->uid = reg->uid;
	run->registered = time(NULL);
	run->addr = reg->addr;
	run->policy.generation = 1;

	pthread_mutex_lock(&r->change);
	pthread_mutex_lock(&r->lock);
	room = runs_find(r, reg->id) >= 0 ? RUNS_EXISTS :
	    runs_addr_slot(r, &reg->addr) >= 0 ? RUNS_ADDR_TAKEN :
	    runs_room(r, reg->uid);
	pthread_mutex_unlock(&r->lock);
	if (room == RUNS_FULL || room == RUNS_USER_FULL ||
	    room == RUNS_ADDR_TAKEN) {
		runs_sweep(r);		/* a gone launcher's run may hold it */
		pthread_mutex_lock(&r->lock);
		room = runs_addr_slot(r, &reg->addr) >= 0 ? RUNS_ADDR_TAKEN :
		    runs_room(r, reg->uid);
		pthread_mutex_unlock(&r->lock);
	}
	if (room == RUNS_ADDED) {
		/* The run takes the policy over only once it is kept. */
		run->policy.set = set;
		run->policy.text = reg->policy;
		if (runs_write(r, NULL, run, NULL) != 0)
			room = RUNS_NOT_KEPT;
		else {
			reg->policy = NULL;
			pthread_mutex_lock(&r->lock);
			runs_put(r, run);
			pthread_mutex_unlock(&r->lock);
		}
	}
	pthread_mutex_unlock(&r->change);
	if (room != RUNS_ADDED) {
		run->policy.set = NULL;
		run->policy.text = NULL;
		run_release(run);
	}
	return room;
}

/*
 * Run id as the peer may see or change it, with a reference (under
 * `change`): 0; -1 no such run; -2 it is not the peer's.
 */
static int
runs_get(struct runs *r, const char *id, const struct runs_peer *who,
    struct run **out)
{
	ssize_t i;
	int ret = 0;

	*out = NULL;
	pthread_mutex_lock(&r->lock);
	if ((i = runs_find(r, id)) < 0)
		ret = -1;
	else if (!who->admin && r->slot[i]->uid != who->uid)
		ret = -2;
	else {
		*out = r->slot[i];
		__atomic_add_fetch(&(*out)->refs, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int
runs_end(struct runs *r, const char *id, const struct runs_peer *who)
{
	struct run *run;
	ssize_t i;
	int ret;

	pthread_mutex_lock(&r->change);
	if ((ret = runs_get(r, id, who, &run)) == 0) {
		if (runs_write(r, run, NULL, NULL) != 0)
			ret = -3;	/* all or nothing: it stays */
		else {
			pthread_mutex_lock(&r->lock);
			if ((i = runs_find(r, id)) >= 0)
				runs_drop(r, (size_t)i);
			pthread_mutex_unlock(&r->lock);
		}
		run_release(run);
	}
	pthread_mutex_unlock(&r->change);
	return ret;
}

int
runs_set_policy(struct runs *r, const char *id, const struct runs_peer *who,
    unsigned long long generation, char *text, struct rules *set,
    unsigned long long *gen)
{
	struct run_policy old, pol;
	struct run_change chg;
	struct run *run;
	int ret;

	pthread_mutex_lock(&r->change);
	if ((ret = runs_get(r, id, who, &run)) != 0) {
		pthread_mutex_unlock(&r->change);
		return ret;
	}
	pthread_mutex_lock(&run->lock);
	*gen = run->policy.generation;
	pthread_mutex_unlock(&run->lock);
	if (*gen != generation)
		ret = -4;
	else {
		pol.set = set;
		pol.text = text;
		pol.generation = generation + 1;
		memset(&chg, 0, sizeof(chg));
		chg.run = run;
		chg.pol = &pol;
		if (runs_write(r, NULL, NULL, &chg) != 0)
			ret = -3;
		else {
			/* The swap: every connection sees one or the other. */
			pthread_mutex_lock(&run->lock);
			old = run->policy;
			run->policy = pol;
			pthread_mutex_unlock(&run->lock);
			runs_hint(r, run);
			rules_free(old.set);
			free(old.text);
			*gen = pol.generation;
		}
	}
	run_release(run);
	pthread_mutex_unlock(&r->change);
	return ret;
}

int
runs_set_addr(struct runs *r, const char *id, const struct runs_peer *who,
    const struct rules_addr *addr)
{
	struct run_change chg;
	struct run *run;
	ssize_t k;
	int ret;

	pthread_mutex_lock(&r->change);
	if ((ret = runs_get(r, id, who, &run)) != 0) {
		pthread_mutex_unlock(&r->change);
		return ret;
	}
	pthread_mutex_lock(&r->lock);
	k = runs_addr_slot(r, addr);
	pthread_mutex_unlock(&r->lock);
	if (run->addr.family != 0)
		ret = -4;
	else if (k >= 0) {
		runs_sweep(r);		/* a gone launcher's run may hold it */
		pthread_mutex_lock(&r->lock);
		k = runs_addr_slot(r, addr);
		pthread_mutex_unlock(&r->lock);
	}
	if (ret == 0 && k >= 0)
		ret = -5;
	if (ret == 0) {
		memset(&chg, 0, sizeof(chg));
		chg.run = run;
		chg.addr = addr;
		if (runs_write(r, NULL, NULL, &chg) != 0)
			ret = -3;
		else {
			pthread_mutex_lock(&r->lock);
			run->addr = *addr;
			index_put(r, r->by_addr, run, 1);
			pthread_mutex_unlock(&r->lock);
		}
	}
	run_release(run);
	pthread_mutex_unlock(&r->change);
	return ret;
}

int
runs_json_str(struct evbuffer *out, const char *s)
{
	size_t len;
	char *q;
	int r;

	if ((q = jsonw_quote(s, &len)) == NULL)
		return -1;
	r = evbuffer_add(out, q, len);
	free(q);
	return r;
}

/* How a run is written out. */
enum run_form {
	RUN_LISTED,		/* GET /v1/runs */
	RUN_SHOWN,		/* GET /v1/runs/RUN: and its last denials */
	RUN_KEPT,		/* runs.json: its launcher's start time, MAC */
};

/* The run's last denials, oldest first, as a JSON array (its lock held). */
static int
run_denials_json(const struct run *run, struct evbuffer *out)
{
	const struct run_about *ab = run->about;
	const struct run_denial *d;
	size_t i, n = ab->nlast < RUN_DENIALS_MAX ? ab->nlast : RUN_DENIALS_MAX;

	if (evbuffer_add_printf(out, ",\"" WIRE_RUN_LAST_DENIALS "\":[") < 0)
		return -1;
	for (i = 0; i < n; i++) {
		d = &ab->last[(ab->nlast - n + i) % RUN_DENIALS_MAX];
		if (evbuffer_add_printf(out, "%s{\"" WIRE_DENIAL_TIME "\":%lld,"
		    "\"" WIRE_DENIAL_HOST "\":", i > 0 ? "," : "",
		    (long long)d->when) < 0 || runs_json_str(out, d->host) != 0 ||
		    evbuffer_add_printf(out, ",\"" WIRE_DENIAL_PORT "\":%d,\""
		    WIRE_DENIAL_REASON "\":", d->port) < 0 ||
		    runs_json_str(out, d->reason) != 0 ||
		    evbuffer_add_printf(out, ",\"" WIRE_DENIAL_RULE "\":") < 0 ||
		    runs_json_str(out, d->rule[0] != '\0' ? d->rule : NULL) != 0 ||
		    evbuffer_add(out, "}", 1) != 0)
			return -1;
	}
	return evbuffer_add(out, "]", 1);
}

/*
 * One run as a JSON object (never its token), appended to out, as the
 * change chg (NULL: none; for another run: none) leaves it: its policy and
 * address as they are (the policy read under its lock), or chg's.  -1: no
 * memory.
 */
static int
run_json(struct run *run, const struct run_change *chg, enum run_form form,
    struct evbuffer *out)
{
	const struct run_policy *pol = NULL;
	const struct rules_addr *ra = &run->addr;
	char pid[24] = "null", mac[RUNS_MAC_BYTES * 2 + 1];
	char addr[RULES_ADDR_TEXT_MAX];
	size_t i;
	int ret = -1;

	if (chg != NULL && chg->run == run) {
		pol = chg->pol;
		if (chg->addr != NULL)
			ra = chg->addr;
	}
	if (run->pid > 0)
		snprintf(pid, sizeof(pid), "%lld", run->pid);
	if (evbuffer_add_printf(out, "{\"" WIRE_RUN_ID "\":") < 0 ||
	    runs_json_str(out, run->id) != 0 ||
	    evbuffer_add_printf(out, ",\"" WIRE_RUN_UID "\":%lu,\""
	    WIRE_RUN_PID "\":%s,\"" WIRE_RUN_REGISTERED "\":%lld,\""
	    WIRE_RUN_COMMAND "\":", (unsigned long)run->uid, pid,
	    (long long)run->registered) < 0 ||
	    runs_json_str(out, run->about->command) != 0 ||
	    evbuffer_add_printf(out, ",\"" WIRE_RUN_PROJECT "\":") < 0 ||
	    runs_json_str(out, run->about->project[0] != '\0' ?
	    run->about->project : NULL) != 0 || evbuffer_add_printf(out, ",\"" WIRE_RUN_ADDR "\":") < 0 ||
	    runs_json_str(out, ra->family != 0 ? rules_addr_text(ra, addr,
	    sizeof(addr)) : NULL) != 0)
		return -1;
	if (form != RUN_KEPT && evbuffer_add_printf(out, ",\""
	    WIRE_RUN_REQUESTS "\":%llu,\"" WIRE_RUN_DENIALS "\":%llu,\""
	    WIRE_RUN_BYTES_UP "\":%llu,\"" WIRE_RUN_BYTES_DOWN "\":%llu",
	    (unsigned long long)__atomic_load_n(&run->requests,
	    __ATOMIC_RELAXED),
	    (unsigned long long)__atomic_load_n(&run->denials,
	    __ATOMIC_RELAXED),
	    (unsigned long long)__atomic_load_n(&run->bytes_up,
	    __ATOMIC_RELAXED),
	    (unsigned long long)__atomic_load_n(&run->bytes_down,
	    __ATOMIC_RELAXED)) < 0)
		return -1;
	if (form == RUN_KEPT) {
		for (i = 0; i < RUNS_MAC_BYTES; i++)
			snprintf(mac + 2 * i, 3, "%02x", run->mac[i]);
		if (evbuffer_add_printf(out, ",\"" WIRE_RUN_PID_START "\":%llu,"
		    "\"" WIRE_RUN_MAC "\":\"%s\"", run->pid_start, mac) < 0)
			return -1;
	}
	if (pol == NULL)
		pthread_mutex_lock(&run->lock);
	if (evbuffer_add_printf(out, ",\"" WIRE_RUN_GENERATION "\":%llu,\""
	    WIRE_RUN_POLICY "\":", pol != NULL ? pol->generation :
	    run->policy.generation) >= 0 &&
	    runs_json_str(out, pol != NULL ? pol->text : run->policy.text) == 0 &&
	    (form != RUN_SHOWN || run_denials_json(run, out) == 0))
		ret = 0;
	if (pol == NULL)
		pthread_mutex_unlock(&run->lock);
	if (ret != 0)
		return -1;
	return evbuffer_add(out, "}", 1);
}

/*
 * Writes DIR/runs.json (under `change`, not the table's lock): the table
 * read under its lock, but for `skip`, with `add` added and the change
 * `chg` made: the table as the change about to be made leaves it.
 * A temporary file, synced, renamed into place.  Nothing to do without a
 * state directory.  0, or -1.
 */
static int
runs_write(struct runs *r, const struct run *skip, struct run *add,
    const struct run_change *chg)
{
	char tmp[PATH_MAX + 8];
	struct evbuffer *out;
	size_t i;
	int fd, ret = -1, first = 1;

	if (r->path[0] == '\0')
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", r->path) >= (int)sizeof(tmp) ||
	    (out = evbuffer_new()) == NULL)
		return -1;
	ret = evbuffer_add_printf(out, "{\"" WIRE_RUNS_LIST "\":[") < 0 ? -1 :
	    0;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->used && ret == 0; i++) {
		if (r->slot[i] == skip)
			continue;
		if ((!first && evbuffer_add(out, ",\n", 2) != 0) ||
		    run_json(r->slot[i], chg, RUN_KEPT, out) != 0)
			ret = -1;
		first = 0;
	}
	pthread_mutex_unlock(&r->lock);
	if (ret == 0 && add != NULL &&
	    ((!first && evbuffer_add(out, ",\n", 2) != 0) ||
	    run_json(add, NULL, RUN_KEPT, out) != 0))
		ret = -1;
	if (ret != 0 || evbuffer_add(out, "]}\n", 3) != 0)
		goto out;
	ret = -1;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1)
		goto out;
	while (evbuffer_get_length(out) > 0)
		if (evbuffer_write(out, fd) <= 0)
			break;
	if (evbuffer_get_length(out) == 0 && fsync(fd) == 0 &&
	    close(fd) == 0) {
		fd = -1;
		if (rename(tmp, r->path) == 0)
			ret = 0;
	}
	if (fd != -1)
		close(fd);
	if (ret != 0)
		unlink(tmp);
 out:
	evbuffer_free(out);
	return ret;
}

int
runs_json(struct runs *r, const char *id, const struct runs_peer *who,
    struct evbuffer *out)
{
	struct run *run;
	size_t i;
	int ret = 0, first = 1;

	pthread_mutex_lock(&r->change);
	runs_sweep(r);		/* what is shown is what is live */
	pthread_mutex_unlock(&r->change);
	if (id != NULL) {
		pthread_mutex_lock(&r->change);
		ret = runs_get(r, id, who, &run);
		pthread_mutex_unlock(&r->change);
		if (ret == 0) {
			if (run_json(run, NULL, RUN_SHOWN, out) != 0)
				ret = -3;
			run_release(run);
		}
		return ret;
	}
	if (evbuffer_add_printf(out, "{\"" WIRE_RUNS_LIST "\":[") < 0)
		return -3;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->used && ret == 0; i++) {
		if (!who->admin && r->slot[i]->uid != who->uid)
			continue;
		if ((!first && evbuffer_add(out, ",", 1) != 0) ||
		    run_json(r->slot[i], NULL, RUN_LISTED, out) != 0)
			ret = -3;
		first = 0;
	}
	pthread_mutex_unlock(&r->lock);
	if (ret == 0 && evbuffer_add(out, "]}", 2) != 0)
		ret = -3;
	return ret;
}

struct run *
runs_check(struct runs *r, const char *id, size_t idlen, const char *token,
    size_t tokenlen)
{
	unsigned char mac[RUNS_MAC_BYTES];
	struct run *run;

	if (!runs_id_valid(id, idlen))
		return NULL;
	index_id_prefetch(r, id, idlen);
	if (runs_mac(r, token, tokenlen, mac) != 0)
		return NULL;
	pthread_mutex_lock(&r->lock);
	if ((run = index_id(r, id, idlen)) != NULL &&
	    crypto_equal(run->mac, mac, sizeof(mac)))
		__atomic_add_fetch(&run->refs, 1, __ATOMIC_RELAXED);
	else
		run = NULL;
	pthread_mutex_unlock(&r->lock);
	explicit_bzero(mac, sizeof(mac));
	return run;
}

int
run_policy(struct run *run, struct run_policy *pol)
{
	int ret = 0;

	memset(pol, 0, sizeof(*pol));
	pthread_mutex_lock(&run->lock);
	if (run->ended)
		ret = -1;
	else {
		if (run->policy.set != NULL)
			rules_prefetch(run->policy.set);
		pol->set = run->policy.set != NULL ?
		    rules_ref(run->policy.set) : NULL;
		pol->generation = run->policy.generation;
	}
	pthread_mutex_unlock(&run->lock);
	return ret;
}

void
run_count(struct run *run, const char *host, int port, const char *reason,
    const char *rule)
{
	struct run_denial *d;

	__atomic_add_fetch(&run->requests, 1, __ATOMIC_RELAXED);
	if (host == NULL)
		return;
	__atomic_add_fetch(&run->denials, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&run->lock);
	d = &run->about->last[run->about->nlast++ % RUN_DENIALS_MAX];
	d->when = time(NULL);
	snprintf(d->host, sizeof(d->host), "%s", host);
	d->port = port;
	snprintf(d->reason, sizeof(d->reason), "%s", reason);
	snprintf(d->rule, sizeof(d->rule), "%s", rule != NULL ? rule : "");
	pthread_mutex_unlock(&run->lock);
}

void
run_bytes(struct run *run, uint64_t up, uint64_t down)
{
	__atomic_add_fetch(&run->bytes_up, up, __ATOMIC_RELAXED);
	__atomic_add_fetch(&run->bytes_down, down, __ATOMIC_RELAXED);
}

const unsigned char *
run_secret(const struct run *run, size_t *len)
{
	*len = sizeof(run->mac);
	return run->mac;
}

uint64_t
runs_changes(const struct runs *r)
{
	return __atomic_load_n(&r->changes, __ATOMIC_ACQUIRE);
}

void
runs_each(struct runs *r, void (*fn)(const struct run *, void *), void *arg)
{
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->used; i++)
		fn(r->slot[i], arg);
	pthread_mutex_unlock(&r->lock);
}

struct run *
runs_ref(struct runs *r, const char *id)
{
	struct run *run;

	pthread_mutex_lock(&r->lock);
	if ((run = index_id(r, id, strlen(id))) != NULL)
		__atomic_add_fetch(&run->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&r->lock);
	return run;
}
