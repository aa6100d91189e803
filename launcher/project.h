/*
 * project.h — a project's .intutic.yaml: found from the current directory
 * upward to the repository root, and checked against the operator's rules
 * (it may only tighten them); its entries become the run's policy
 * (policy.h).
 */
#ifndef INTUTIC_PROJECT_H
#define INTUTIC_PROJECT_H

#include <stddef.h>

#define PROJECT_FILE	".intutic.yaml"

struct rules;

/*
 * The nearest .intutic.yaml: in the current directory or one above it, up
 * to the first directory that holds .git (the repository root) or /.
 * 1 and its path; 0 when there is none; -1 and why on an error.
 */
int	 project_find(char *path, size_t len, char *err, size_t errlen);

/*
 * Loads the project file at `path` and checks that it only narrows
 * `ceiling`.  0 when it does, with the set loaded in *out (the caller's,
 * rules_free(); out may be NULL); -1 and why (the file:line:col of a parse
 * error, or the entry that widens), *out NULL.
 */
int	 project_check(const char *path, const struct rules *ceiling,
	    struct rules **out, char *err, size_t errlen);

#endif /* INTUTIC_PROJECT_H */
