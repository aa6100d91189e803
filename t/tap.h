/*
 * tap.h — a small TAP (Test Anything Protocol) emitter for the C unit tests
 * in t/unit/.  Output goes to stdout, one line per call, flushed at once so a
 * test that crashes still leaves every line it reported.  automake's
 * tap-driver reads it (see t/README.md).
 *
 * A unit test looks like:
 *
 *	int
 *	main(void)
 *	{
 *		tap_plan(2);	(or leave it out and let tap_done count)
 *		tap_ok(f() == 0, "f succeeds");
 *		tap_is_str(g(), "x", "g returns x");
 *		return tap_done();
 *	}
 *
 * Descriptions are printf formats.  When printed, a '#' in one becomes "\#"
 * and a newline a space, so a description can never turn into a TAP
 * directive or a second line.  A formatted description, reason or diagnostic longer
 * than TAP_TEXT_MAX bytes is cut there and marked with "...".
 */
#ifndef INTUTIC_TAP_H
#define INTUTIC_TAP_H

#define TAP_TEXT_MAX	4096	/* bytes of one formatted message */

/*
 * Print the plan "1..n" first.  Call it once, before any test point, or not
 * at all (then tap_done() prints the plan at the end).  n must be > 0: a
 * test with nothing to run calls tap_skip_all().
 */
void	tap_plan(int n);

/*
 * Print "1..0 # SKIP reason" and exit(0): the whole program cannot run here.
 * Only before the first test point and without a plan; later it is a bug in
 * the test, reported as a diagnostic and exit(1).
 */
void	tap_skip_all(const char *fmt, ...)
	    __attribute__((__format__(__printf__, 1, 2)))
	    __attribute__((__noreturn__));

/*
 * Print "ok N - description" when cond is non-zero, else
 * "not ok N - description".  Returns 1 when the point passed, 0 when not.
 */
int	tap_ok(int cond, const char *fmt, ...)
	    __attribute__((__format__(__printf__, 2, 3)));

/*
 * One test point that passes when got == want; on failure the two values
 * follow as "# got: ..." and "# want: ..." diagnostics.  Returns like tap_ok.
 */
int	tap_is_int(long long got, long long want, const char *fmt, ...)
	    __attribute__((__format__(__printf__, 3, 4)));

/*
 * One test point that passes when got and want are equal strings.  Either
 * may be NULL: two NULLs are equal, a NULL and a string are not.  On failure
 * the two are printed quoted (NULL unquoted) as "# got:" / "# want:".
 */
int	tap_is_str(const char *got, const char *want, const char *fmt, ...)
	    __attribute__((__format__(__printf__, 3, 4)));

/*
 * Print n points "ok N # SKIP reason": tests that cannot run here.  They
 * count as run for the plan and never as failed.  n <= 0 prints nothing.
 */
void	tap_skip(int n, const char *fmt, ...)
	    __attribute__((__format__(__printf__, 2, 3)));

/*
 * Print a diagnostic to stdout, each of its lines prefixed with "# ".  It is
 * not a test point and changes no count.
 */
void	tap_diag(const char *fmt, ...)
	    __attribute__((__format__(__printf__, 1, 2)));

/*
 * Finish: print the plan "1..N" if tap_plan() was not called, and a
 * diagnostic when the count does not match the plan.  Returns the exit
 * status for main(): 0 when every point passed (or was skipped) and their
 * number matches the plan, 1 otherwise.
 */
int	tap_done(void);

#endif /* INTUTIC_TAP_H */
