/*
 * fuzz-settings-json.c — the settings reader (launcher/settings.h,
 * settings_parse()): the input, less its first byte, as the workspace
 * API's answer, the cache (both JSON) or the local file (YAML), chosen by
 * the first byte.  Checked: 0 with one of the three levels and logins
 * allowed or denied, or -1 with a message; the message always ends within
 * its buffer, and is one line.
 */
#include "config.h"

#include <string.h>

#include "settings.h"
#include "fuzz.h"

#define FUZZ_ERR_MAX	512	/* what settings_resolve() gives it */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {
		"HTTP 200 but not valid settings",
		"the cache '/fuzz/settings.json' is malformed",
		"/fuzz/settings.yaml",
	};
	struct settings_vals v = { SETTINGS_OFF, 0 };
	enum settings_doc doc;
	char err[FUZZ_ERR_MAX];
	int r;

	if (size == 0 || size - 1 > SETTINGS_FILE_MAX)
		return 0;
	doc = (enum settings_doc)(data[0] % 3);
	memset(err, 'x', sizeof(err));
	r = settings_parse(doc, names[doc], (const char *)data + 1, size - 1,
	    &v, err, sizeof(err));
	FUZZ_ASSERT(r == 0 || r == -1);
	if (r == 0) {
		FUZZ_ASSERT(v.level == SETTINGS_OFF ||
		    v.level == SETTINGS_RECOMMEND || v.level == SETTINGS_REQUIRE);
		FUZZ_ASSERT(v.logins_deny == 0 || v.logins_deny == 1);
		FUZZ_ASSERT(settings_level_str(v.level) != NULL);
		return 0;
	}
	FUZZ_ASSERT(memchr(err, '\0', sizeof(err)) != NULL);
	FUZZ_ASSERT(err[0] != '\0');
	FUZZ_ASSERT(strchr(err, '\n') == NULL);
	return 0;
}
