/*
 * runs.c — the registered runs (see runs.h).
 *
 * An array of at most RUNS_MAX runs under one lock: a registration takes
 * the next free slot, an end moves the last run into the one it frees; a
 * check scans the used slots.  Runs are few, and a check happens once per
 * request that carries credentials.  A token is kept only as its MAC
 * (HMAC-SHA256 under a key of the state directory's, DIR/runs.key), and
 * every change is written to DIR/runs.json (a temporary file renamed)
 * before it is answered, so that a proxy started again knows the runs
 * whose launchers still live.
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
#include "jsonw.h"
#include "paths.h"
#include "runrec.h"
#include "yread.h"
#include "wire.h"

#include "runs.h"

#define RUNS_KEY_BYTES		32	/* the MAC's key */
#define RUNS_MAC_BYTES		CRYPTO_MAC_BYTES	/* HMAC-SHA256 */
#define RUNS_FILE_MAX		(RUNS_MAX * 3 * 1024)	/* bytes of runs.json */

struct run {
	char			 id[RUN_ID_MAX];
	unsigned char		 mac[RUNS_MAC_BYTES];	/* of its token */
	char			 command[RUN_COMMAND_MAX];
	char			 project[RUN_PROJECT_MAX];
	long long		 pid;
	unsigned long long	 pid_start;	/* its start time; 0: unknown */
	uid_t			 uid;
	time_t			 registered;
};

struct runs {
	pthread_mutex_t	 lock;
	struct run	*slot;		/* RUNS_MAX */
	size_t		 used;
	unsigned char	 key[RUNS_KEY_BYTES];
	char		 path[PATH_MAX];	/* runs.json; "": kept nowhere */
};

static unsigned long long	proc_start(long long pid);
static void			runs_drop(struct runs *r, size_t i);
static int			runs_save(struct runs *r);

/* The MAC of a token under the table's key. */
static int
runs_mac(const struct runs *r, const char *token, size_t len,
    unsigned char mac[RUNS_MAC_BYTES])
{
	return crypto_mac(r->key, RUNS_KEY_BYTES, token, len, mac);
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

/* Hex digits into bytes: 0, or -1 when s is not len * 2 of them. */
static int
unhex(const char *s, unsigned char *out, size_t len)
{
	size_t i;
	int hi, lo;

	if (strlen(s) != len * 2)
		return -1;
	for (i = 0; i < len; i++) {
		hi = s[2 * i] >= 'a' ? s[2 * i] - 'a' + 10 : s[2 * i] - '0';
		lo = s[2 * i + 1] >= 'a' ? s[2 * i + 1] - 'a' + 10 :
		    s[2 * i + 1] - '0';
		if (hi < 0 || hi > 15 || lo < 0 || lo > 15)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/*
 * DIR/runs.json, the runs a proxy before this one kept: those whose
 * launcher still lives (the same pid with the same start time) come back.
 * A missing file is none.  0, or -1 and why.
 */
static int
runs_load(struct runs *r, char *why, size_t whylen)
{
	struct runrec *recs = NULL;
	struct run *run;
	struct stat st;
	size_t i, n;
	char *buf;
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
		    proc_start(rec->pid) != (unsigned long long)rec->pid_start)
			continue;	/* its launcher is gone */
		run = &r->slot[r->used];
		memset(run, 0, sizeof(*run));
		if (unhex(rec->mac, run->mac, sizeof(run->mac)) != 0)
			continue;
		snprintf(run->id, sizeof(run->id), "%s", rec->id);
		memcpy(run->command, rec->command, strlen(rec->command) + 1);
		memcpy(run->project, rec->project, strlen(rec->project) + 1);
		run->pid = rec->pid;
		run->pid_start = (unsigned long long)rec->pid_start;
		run->uid = (uid_t)rec->uid;
		run->registered = (time_t)rec->registered;
		r->used++;
	}
	free(recs);
	return 0;
}

struct runs *
runs_new(const char *dir, char *why, size_t whylen)
{
	struct runs *r;

	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->slot = calloc(RUNS_MAX, sizeof(*r->slot))) == NULL) {
		free(r);
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	if (dir == NULL) {
		if (crypto_random(r->key, sizeof(r->key)) == 0)
			return r;
		snprintf(why, whylen, "no random bytes for a key");
	} else if (snprintf(r->path, sizeof(r->path), "%s/runs.json", dir) >=
	    (int)sizeof(r->path))
		snprintf(why, whylen, "the state directory's path is too long");
	else if (paths_mkdirs(dir) != 0)
		snprintf(why, whylen, "cannot create the state directory "
		    "'%s': %s", dir, strerror(errno));
	else if (runs_key(r, dir, why, whylen) == 0 &&
	    runs_load(r, why, whylen) == 0 && runs_save(r) == 0)
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
	if (r == NULL)
		return;
	explicit_bzero(r->slot, RUNS_MAX * sizeof(*r->slot));
	explicit_bzero(r->key, sizeof(r->key));
	free(r->slot);
	pthread_mutex_destroy(&r->lock);
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

/* Printable text without control bytes, quotes or backslashes. */
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
    KEY_PID };

/* Stores the value of `key`; 0, or -1 and why. */
static int
reg_value(struct run_reg *reg, enum reg_key key, const char *v, size_t len,
    int is_null, char *why, size_t whylen)
{
	char *end;
	long long pid;

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
		errno = 0;
		pid = strtoll(v, &end, 10);
		if (len == 0 || end != v + len || errno != 0 || pid <= 0) {
			snprintf(why, whylen, "\"pid\" must be null or a "
			    "positive number");
			return -1;
		}
		reg->pid = pid;
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
};
#define REG_KEYS	((int)(sizeof(reg_keys) / sizeof(reg_keys[0])))

/* The object's pairs: known keys once, each a scalar; others skipped. */
static int
reg_map(struct yread *p, void *arg)
{
	struct run_reg *reg = arg;
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
	if (!(seen & (1u << KEY_RUN)) || !(seen & (1u << KEY_TOKEN)) ||
	    !(seen & (1u << KEY_COMMAND)))
		return yread_fail(p, NULL, "\"run\", \"token\" and \"command\" "
		    "are required");
	return 0;
}

/*
 * One JSON object, read with the one YAML/JSON event reader in JSON mode
 * (common/yread.h): anything nested where a scalar is expected, repeated
 * or missing is refused; keys it does not know are skipped.
 */
int
runs_parse(const char *body, size_t len, struct run_reg *reg, char *why,
    size_t whylen)
{
	struct yread p;
	int r;

	memset(reg, 0, sizeof(*reg));
	reg->pid = -1;
	if (len > RUNS_BODY_MAX) {
		snprintf(why, whylen, "the registration is larger than %d bytes",
		    RUNS_BODY_MAX);
		return -1;
	}
	yread_init(&p, "the registration", YREAD_TEXT, 1, body, len, why,
	    whylen);
	r = yread_run(&p, reg_map, reg);
	if (r != 0)
		explicit_bzero(reg->token, sizeof(reg->token));
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

/* Run i's launcher is gone: its pid names no process, or another one. */
static int
launcher_gone(const struct run *run)
{
	return run->pid > 0 && run->pid_start != 0 &&
	    proc_start(run->pid) != run->pid_start;
}

/* Forgets slot i (under the lock): the last run moves into it. */
static void
runs_drop(struct runs *r, size_t i)
{
	r->used--;
	if (i != r->used)
		r->slot[i] = r->slot[r->used];
	explicit_bzero(&r->slot[r->used], sizeof(r->slot[r->used]));
}

/* Ends the runs whose launcher is gone (under the lock). */
static void
runs_sweep(struct runs *r)
{
	size_t i = 0;

	while (i < r->used)
		if (launcher_gone(&r->slot[i]))
			runs_drop(r, i);
		else
			i++;
}

/* How many runs uid owns (under the lock). */
static size_t
runs_of(const struct runs *r, uid_t uid)
{
	size_t i, n = 0;

	for (i = 0; i < r->used; i++)
		if (r->slot[i].uid == uid)
			n++;
	return n;
}

enum runs_added
runs_add(struct runs *r, const struct run_reg *reg)
{
	unsigned long long start = 0;
	struct run *run;
	size_t i;

	if (reg->pid > 0 && (start = proc_start(reg->pid)) == 0)
		return RUNS_NO_PID;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->used; i++)
		if (strcmp(r->slot[i].id, reg->id) == 0) {
			pthread_mutex_unlock(&r->lock);
			return RUNS_EXISTS;
		}
	if (r->used == RUNS_MAX || runs_of(r, reg->uid) >= RUNS_PER_USER_MAX)
		runs_sweep(r);
	if (r->used == RUNS_MAX || runs_of(r, reg->uid) >= RUNS_PER_USER_MAX) {
		i = r->used;
		pthread_mutex_unlock(&r->lock);
		return i == RUNS_MAX ? RUNS_FULL : RUNS_USER_FULL;
	}
	run = &r->slot[r->used];
	memset(run, 0, sizeof(*run));
	if (runs_mac(r, reg->token, strlen(reg->token), run->mac) != 0) {
		pthread_mutex_unlock(&r->lock);
		return RUNS_NOT_KEPT;
	}
	r->used++;
	snprintf(run->id, sizeof(run->id), "%s", reg->id);
	snprintf(run->command, sizeof(run->command), "%s", reg->command);
	snprintf(run->project, sizeof(run->project), "%s", reg->project);
	run->pid = reg->pid;
	run->pid_start = start;
	run->uid = reg->uid;
	run->registered = time(NULL);
	if (runs_save(r) != 0) {
		runs_drop(r, r->used - 1);	/* all or nothing */
		pthread_mutex_unlock(&r->lock);
		return RUNS_NOT_KEPT;
	}
	pthread_mutex_unlock(&r->lock);
	return RUNS_ADDED;
}

/* The slot of run id (under the lock); -1: none. */
static ssize_t
runs_find(const struct runs *r, const char *id)
{
	size_t i;

	for (i = 0; i < r->used; i++)
		if (strcmp(r->slot[i].id, id) == 0)
			return (ssize_t)i;
	return -1;
}

int
runs_end(struct runs *r, const char *id, const struct runs_peer *who)
{
	ssize_t i;
	int ret = 0;

	struct run gone;

	pthread_mutex_lock(&r->lock);
	if ((i = runs_find(r, id)) < 0)
		ret = -1;
	else if (!who->admin && r->slot[i].uid != who->uid)
		ret = -2;
	else {
		gone = r->slot[i];
		runs_drop(r, (size_t)i);
		if (runs_save(r) != 0) {	/* all or nothing */
			r->slot[r->used++] = gone;
			ret = -3;
		}
		explicit_bzero(&gone, sizeof(gone));
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* s quoted as a JSON string (NULL: null), appended to out; -1: no memory. */
static int
json_add(struct evbuffer *out, const char *s)
{
	char buf[RUN_PROJECT_MAX * JSONW_ESC_MAX + 3];
	size_t used = 0;

	buf[0] = '\0';
	if (jsonw_str(buf, sizeof(buf), &used, s) != 0)
		return -1;
	return evbuffer_add(out, buf, used);
}

/*
 * One run as a JSON object (never its token), appended to out; kept (for
 * runs.json), with its launcher's start time and its token's MAC.  -1: no
 * memory.
 */
static int
run_json(const struct run *run, int kept, struct evbuffer *out)
{
	char pid[24] = "null", mac[RUNS_MAC_BYTES * 2 + 1];
	size_t i;

	if (run->pid > 0)
		snprintf(pid, sizeof(pid), "%lld", run->pid);
	if (evbuffer_add_printf(out, "{\"" WIRE_RUN_ID "\":") < 0 ||
	    json_add(out, run->id) != 0 ||
	    evbuffer_add_printf(out, ",\"" WIRE_RUN_UID "\":%lu,\""
	    WIRE_RUN_PID "\":%s,\"" WIRE_RUN_REGISTERED "\":%lld,\""
	    WIRE_RUN_COMMAND "\":", (unsigned long)run->uid, pid,
	    (long long)run->registered) < 0 ||
	    json_add(out, run->command) != 0 ||
	    evbuffer_add_printf(out, ",\"" WIRE_RUN_PROJECT "\":") < 0 ||
	    json_add(out, run->project[0] != '\0' ? run->project : NULL) != 0)
		return -1;
	if (kept) {
		for (i = 0; i < RUNS_MAC_BYTES; i++)
			snprintf(mac + 2 * i, 3, "%02x", run->mac[i]);
		if (evbuffer_add_printf(out, ",\"" WIRE_RUN_PID_START "\":%llu,"
		    "\"" WIRE_RUN_MAC "\":\"%s\"", run->pid_start, mac) < 0)
			return -1;
	}
	return evbuffer_add(out, "}", 1);
}

/*
 * Writes DIR/runs.json (under the lock): a temporary file, synced, renamed
 * into place.  Nothing to do without a state directory.  0, or -1.
 */
static int
runs_save(struct runs *r)
{
	char tmp[PATH_MAX + 8];
	struct evbuffer *out;
	size_t i;
	int fd, ret = -1;

	if (r->path[0] == '\0')
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", r->path) >= (int)sizeof(tmp) ||
	    (out = evbuffer_new()) == NULL)
		return -1;
	if (evbuffer_add_printf(out, "{\"" WIRE_RUNS_LIST "\":[") < 0)
		goto out;
	for (i = 0; i < r->used; i++)
		if ((i > 0 && evbuffer_add(out, ",", 1) != 0) ||
		    run_json(&r->slot[i], 1, out) != 0)
			goto out;
	if (evbuffer_add(out, "]}\n", 3) != 0)
		goto out;
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
	ssize_t k;
	size_t i;
	int ret = 0, first = 1;

	pthread_mutex_lock(&r->lock);
	runs_sweep(r);		/* what is shown is what is live */
	if (id != NULL) {
		if ((k = runs_find(r, id)) < 0)
			ret = -1;
		else if (!who->admin && r->slot[k].uid != who->uid)
			ret = -2;
		else if (run_json(&r->slot[k], 0, out) != 0)
			ret = -3;
		pthread_mutex_unlock(&r->lock);
		return ret;
	}
	if (evbuffer_add_printf(out, "{\"" WIRE_RUNS_LIST "\":[") < 0)
		ret = -3;
	for (i = 0; i < r->used && ret == 0; i++) {
		if (!who->admin && r->slot[i].uid != who->uid)
			continue;
		if ((!first && evbuffer_add(out, ",", 1) != 0) ||
		    run_json(&r->slot[i], 0, out) != 0)
			ret = -3;
		first = 0;
	}
	if (ret == 0 && evbuffer_add(out, "]}", 2) != 0)
		ret = -3;
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int
runs_check(struct runs *r, const char *id, size_t idlen, const char *token,
    size_t tokenlen)
{
	unsigned char mac[RUNS_MAC_BYTES];
	size_t i;
	int ok = 0;

	if (!runs_id_valid(id, idlen) || runs_mac(r, token, tokenlen, mac) != 0)
		return 0;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->used; i++) {
		const struct run *run = &r->slot[i];

		if (strlen(run->id) == idlen &&
		    memcmp(run->id, id, idlen) == 0) {
			ok = crypto_equal(run->mac, mac, sizeof(mac));
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	explicit_bzero(mac, sizeof(mac));
	return ok;
}
