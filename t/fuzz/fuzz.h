/*
 * fuzz.h — what every harness in t/fuzz/ shares.
 *
 * A harness is one LLVMFuzzerTestOneInput() that hands the input to the
 * real code, the way the program does, and checks what that code promises
 * in its header.  A broken promise is abort(): libFuzzer then keeps the
 * input as a crash, and the replay driver (replay.c) dies on it in
 * `make check`.
 *
 * Built two ways from the same source: with clang and -fsanitize=fuzzer
 * by scripts/fuzz, and with the project's compiler and sanitizers against
 * replay.c by t/fuzz/Makefile.inc.
 */
#ifndef INTUTIC_FUZZ_H
#define INTUTIC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Called once per input; always returns 0 (libFuzzer's contract). */
int	 LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Dies with the harness's file and line and what was expected when `cond`
 * is false.  Never compiled out.
 */
#define FUZZ_ASSERT(cond) do {						\
	if (!(cond))							\
		fuzz_fail(__FILE__, __LINE__, #cond);			\
} while (0)

void	 fuzz_fail(const char *file, int line, const char *what)
	    __attribute__((__noreturn__));

/*
 * A private directory for files a harness must write (the rules loader
 * reads a path): made once, mode 0700, under $TMPDIR (else /tmp), removed
 * with everything in it at exit.  Returns its path; dies when it cannot
 * be made.
 */
const char	*fuzz_tmpdir(void);

/*
 * Writes len bytes of buf to the file `name` in fuzz_tmpdir(), replacing
 * it.  Writes the file's path into path (size pathlen).  Dies on failure.
 */
void	 fuzz_write_file(const char *name, const void *buf, size_t len,
	    char *path, size_t pathlen);

/*
 * ASan's manual poisoning, when the build has ASan: a harness that reads
 * a prefix of its input marks the rest unreadable, so that a read past
 * the length given is reported.  No-ops without ASan.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_HAVE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_HAVE_ASAN 1
#endif
#ifdef FUZZ_HAVE_ASAN
#include <sanitizer/asan_interface.h>
#define FUZZ_POISON(p, n)	ASAN_POISON_MEMORY_REGION((p), (n))
#define FUZZ_UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FUZZ_POISON(p, n)	((void)(p), (void)(n))
#define FUZZ_UNPOISON(p, n)	((void)(p), (void)(n))
#endif

#endif /* INTUTIC_FUZZ_H */
