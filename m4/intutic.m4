# INTUTIC_CHECK_CFLAG(FLAG, ACTION-IF-ACCEPTED)
# Accepts FLAG when the compiler compiles an empty program with it and with
# -Werror (so that an unknown warning option is not silently ignored).
AC_DEFUN([INTUTIC_CHECK_CFLAG], [
	AC_MSG_CHECKING([whether $CC accepts $1])
	intutic_save_CFLAGS=$CFLAGS
	CFLAGS="$CFLAGS -Werror $1"
	AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
	    [AC_MSG_RESULT([yes]); $2], [AC_MSG_RESULT([no])])
	CFLAGS=$intutic_save_CFLAGS
])
