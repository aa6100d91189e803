/*
 * log.h — diagnostics for the programs (never for rules/, which returns
 * errors instead).  Lines go to stderr as "PROG: message"; the _f variants
 * put the calling function's name first, for messages a developer reads.
 * Style: lowercase first word, no trailing period, what failed first, names
 * quoted: "cannot read 'rules.yaml': No such file or directory".
 */
#ifndef INTUTIC_LOG_H
#define INTUTIC_LOG_H

enum log_level {
	LOG_LEVEL_FATAL = 0,
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* Sets the program name shown before each line and the least level shown. */
void	 log_init(const char *progname, enum log_level level);

void	 log_msg(enum log_level level, const char *func, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
void	 log_fatal(const char *func, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3), noreturn));

#define error(...)	log_msg(LOG_LEVEL_ERROR, NULL, __VA_ARGS__)
#define error_f(...)	log_msg(LOG_LEVEL_ERROR, __func__, __VA_ARGS__)
#define warn_msg(...)	log_msg(LOG_LEVEL_WARN, NULL, __VA_ARGS__)
#define info(...)	log_msg(LOG_LEVEL_INFO, NULL, __VA_ARGS__)
#define debug_f(...)	log_msg(LOG_LEVEL_DEBUG, __func__, __VA_ARGS__)
#define fatal(...)	log_fatal(NULL, __VA_ARGS__)
#define fatal_f(...)	log_fatal(__func__, __VA_ARGS__)

#endif /* INTUTIC_LOG_H */
