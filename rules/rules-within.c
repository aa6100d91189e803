/*
 * rules-within.c — deciding under a run's policy: the operator's rules
 * (the ceiling) narrowed by a rule set of the run's own, for the proxy and
 * for `intutic rules test --run` alike.  See rules.h.
 */
#include "config.h"

#include <stddef.h>

#include "rules-int.h"

void
rules_decide_within(const struct rules *ceiling, const struct rules *policy,
    const struct rules_host *host, uint16_t port, struct rules_decision *d)
{
	struct rules_decision pd;

	rules_decide(ceiling, host, port, d);
	if (policy == NULL || d->verdict != RULES_ALLOW)
		return;
	rules_decide(policy, host, port, &pd);
	if (pd.verdict == RULES_ALLOW ||
	    (pd.reason != RULES_REASON_DENIED && policy->nallow == 0))
		return;		/* the ceiling's allowance stands */
	*d = pd;		/* denied, or on none of the run's allow entries */
}

void
rules_check_addr_within(const struct rules *ceiling,
    const struct rules *policy, const struct rules_addr *a, uint16_t port,
    struct rules_decision *d)
{
	struct rules_decision pd;

	rules_check_addr(ceiling, a, port, d);
	if (policy == NULL || d->verdict != RULES_ALLOW)
		return;
	/* Only the run's deny blocks: the ceiling judged internal ones. */
	rules_check_addr(policy, a, port, &pd);
	if (pd.verdict != RULES_ALLOW && pd.reason == RULES_REASON_DENIED)
		*d = pd;
}

void
rules_decide_name_within(const struct rules *ceiling,
    const struct rules *policy, const struct rules_host *host,
    struct rules_decision *d, uint16_t *port)
{
	uint16_t ports[RULES_NAME_PORTS_MAX], first;
	struct rules_decision pd;
	size_t i, n;

	n = rules_name_ports(ceiling, host, ports, RULES_NAME_PORTS_MAX);
	/* No allow entry of the ceiling names it: its decision at a port. */
	first = n > 0 ? ports[0] : ceiling->ndefault_ports > 0 ?
	    ceiling->default_ports[0] : 443;
	rules_decide_within(ceiling, policy, host, first, d);
	if (port != NULL)
		*port = first;
	for (i = 1; i < n && d->verdict != RULES_ALLOW; i++) {
		rules_decide_within(ceiling, policy, host, ports[i], &pd);
		if (pd.verdict == RULES_ALLOW) {
			*d = pd;
			if (port != NULL)
				*port = ports[i];
		}
	}
}

int
rules_has_allow(const struct rules *r)
{
	return r->nallow > 0;
}
