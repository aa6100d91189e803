/*
 * test-gateway.c — the provider gateway's secret, fingerprints, brokered
 * keys and leak index (proxy/gateway.c), against a real runs table and a
 * rule set loaded from text.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway.h"
#include "rules.h"
#include "runs.h"
#include "tap.h"

static const char rules_text[] =
    "version: 1\n"
    "allow: [api.a.test]\n"
    "providers:\n"
    "  anthropic:\n"
    "    api: api.a.test\n"
    "    key-headers: [x-api-key]\n"
    "    broker: {env: GW_TEST_KEY_A, header: x-api-key,"
    " prefix: sk-ant-api03-, length: 108}\n"
    "  openai:\n"
    "    api: api.o.test\n"
    "    key-headers: [authorization]\n"
    "    broker: {env: GW_TEST_KEY_O, header: authorization,"
    " scheme: Bearer, prefix: sk-proj-, length: 60}\n"
    "gateway: {anthropic: broker, openai: on}\n";

static void
reg_make(struct run_reg *reg, const char *id, char fill)
{
	memset(reg, 0, sizeof(*reg));
	snprintf(reg->id, sizeof(reg->id), "%s", id);
	memset(reg->token, fill, 40);
	reg->token[40] = '\0';
	snprintf(reg->command, sizeof(reg->command), "agent");
	reg->pid = -1;
	reg->generation = -1;
	reg->uid = 1000;
}

int
main(void)
{
	char dir[] = "/tmp/test-gateway.XXXXXX", path[256], err[512];
	char fp1[GATEWAY_FINGERPRINT_MAX], fp2[GATEWAY_FINGERPRINT_MAX];
	char s1[GATEWAY_SENTINEL_MAX], s2[GATEWAY_SENTINEL_MAX];
	char s3[GATEWAY_SENTINEL_MAX], key[GATEWAY_KEY_MAX + 1];
	char run[RUN_ID_MAX], prov[64], text[512];
	const struct rules_provider *pa;
	struct rules_error rerr;
	struct rules *rules = NULL;
	struct gateway *g, *g2;
	struct runs *runs;
	struct run_reg reg;
	struct run *r1, *r2;
	struct stat st;
	size_t i;
	int alnum;

	if (mkdtemp(dir) == NULL)
		return 1;
	/* the secret: made 0600 once, read back the same */
	g = gateway_new(dir, err, sizeof(err));
	tap_ok(g != NULL, "the secret is made (%s)", g == NULL ? err : "ok");
	snprintf(path, sizeof(path), "%s/%s", dir, GATEWAY_SECRET_FILE);
	tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 &&
	    st.st_size == 65, "the secret file: 64 hex digits, mode 600");
	gateway_fingerprint(g, "anthropic", "sk-ant-xyz", 10, fp1);
	g2 = gateway_new(dir, err, sizeof(err));
	gateway_fingerprint(g2, "anthropic", "sk-ant-xyz", 10, fp2);
	tap_is_str(fp2, fp1, "the secret is read again: the same fingerprint");
	tap_ok(strncmp(fp1, "hmac:", 5) == 0 && strlen(fp1) == 21 &&
	    strstr(fp1, "xyz") == NULL, "a fingerprint is hmac: and 16 hex "
	    "digits, no piece of the key");
	gateway_fingerprint(g, "openai", "sk-ant-xyz", 10, fp2);
	tap_ok(strcmp(fp1, fp2) != 0, "the provider is in the fingerprint");
	gateway_free(g2);

	/* a damaged secret is refused, naming the fix */
	snprintf(path, sizeof(path), "%s/bad", dir);
	mkdir(path, 0700);
	snprintf(text, sizeof(text), "%s/bad/%s", dir, GATEWAY_SECRET_FILE);
	{
		FILE *f = fopen(text, "w");

		if (f != NULL) {
			fputs("not hex\n", f);
			fclose(f);
		}
	}
	tap_ok(gateway_new(path, err, sizeof(err)) == NULL &&
	    strstr(err, "remove it") != NULL, "a secret that is not hex: "
	    "refused (%s)", err);
	unlink(text);
	rmdir(path);

	/* the keys: none for a brokered provider is refused, naming both ways */
	tap_ok(rules_load_text("t.yaml", rules_text, strlen(rules_text), 0,
	    &rules, &rerr) == 0, "the rules load");
	unsetenv("GW_TEST_KEY_A");
	tap_ok(gateway_keys_load(g, rules, NULL, err, sizeof(err)) != 0 &&
	    strstr(err, "GW_TEST_KEY_A") != NULL &&
	    strstr(err, "--gateway-keys") != NULL, "no key: refused (%s)", err);
	tap_is_int(gateway_key(g, "anthropic", key), -1, "and none is held");
	setenv("GW_TEST_KEY_A", "sk-ant-api03-REAL", 1);
	tap_ok(gateway_keys_load(g, rules, dir, err, sizeof(err)) == 0,
	    "a key from the environment");
	tap_ok(gateway_key(g, "anthropic", key) == 17 &&
	    strcmp(key, "sk-ant-api03-REAL") == 0, "it is held");
	tap_is_int(gateway_key(g, "openai", key), -1,
	    "a provider that is only `on` has no brokered key");

	/* sentinels: the provider's shape, per run, stable, not the key */
	if ((runs = runs_new(NULL, NULL, NULL, err, sizeof(err))) == NULL)
		return 1;
	reg_make(&reg, "run-a", 'a');
	(void)runs_add(runs, &reg, NULL);
	reg_make(&reg, "run-b", 'b');
	(void)runs_add(runs, &reg, NULL);
	r1 = runs_ref(runs, "run-a");
	r2 = runs_ref(runs, "run-b");
	pa = rules_provider_find(rules, "anthropic", 9);
	tap_ok(r1 != NULL && r2 != NULL && pa != NULL &&
	    gateway_sentinel(g, pa, r1, s1) == 0 &&
	    gateway_sentinel(g, pa, r2, s2) == 0 &&
	    gateway_sentinel(g, pa, r1, s3) == 0, "sentinels are made");
	alnum = 1;
	for (i = 13; i < strlen(s1); i++)
		if (!isalnum((unsigned char)s1[i]))
			alnum = 0;
	tap_ok(strlen(s1) == 108 && strncmp(s1, "sk-ant-api03-", 13) == 0 &&
	    alnum, "shaped like the provider's key: %s", s1);
	tap_is_str(s3, s1, "the same run gets the same one");
	tap_ok(strcmp(s1, s2) != 0, "another run another");

	/* the leak index */
	tap_ok(gateway_leak(g, runs, s1, strlen(s1), run, prov) == 1 &&
	    strcmp(run, "run-a") == 0 && strcmp(prov, "anthropic") == 0,
	    "the whole sentinel is found, with its run and provider");
	for (i = 0; i < 31; i++)
		text[i] = (char)tolower((unsigned char)s2[40 + i]);
	snprintf(text + 31, sizeof(text) - 31, ".example.test");
	tap_ok(gateway_leak(g, runs, text, strlen(text), run, prov) == 1 &&
	    strcmp(run, "run-b") == 0, "31 of its letters in a row, lower "
	    "case, in a name: found");
	tap_ok(gateway_leak(g, runs, s2 + 40, 15, run, prov) == 0,
	    "15 are not");
	tap_ok(gateway_leak(g, runs, "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAA"
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 70, run, prov) == 0,
	    "the prefix and other letters are not");
	{
		struct runs_peer admin = { 0, 1 };

		tap_ok(runs_end(runs, "run-a", &admin) == 0, "run-a ends");
	}
	tap_ok(gateway_leak(g, runs, s1, strlen(s1), run, prov) == 0,
	    "its sentinel is no longer looked for (it died with its run)");
	tap_ok(gateway_leak(g, runs, s2, strlen(s2), run, prov) == 1,
	    "the other run's still is");
	unsetenv("GW_TEST_KEY_A");
	run_release(r1);
	run_release(r2);
	runs_free(runs);
	rules_free(rules);
	gateway_free(g);
	snprintf(path, sizeof(path), "%s/%s", dir, GATEWAY_SECRET_FILE);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
