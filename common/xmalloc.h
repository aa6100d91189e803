/*
 * xmalloc.h — allocation that cannot fail, for command-line code only: on
 * failure the program exits with a message.  Never use these in a
 * connection path, where an allocation failure closes that connection.
 */
#ifndef INTUTIC_XMALLOC_H
#define INTUTIC_XMALLOC_H

#include <stddef.h>

void	*xmalloc(size_t len);
void	*xcalloc(size_t n, size_t len);
void	*xreallocarray(void *p, size_t n, size_t len);
char	*xstrdup(const char *s);
int	 xasprintf(char **out, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

#endif /* INTUTIC_XMALLOC_H */
