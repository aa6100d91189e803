#!/bin/sh
test_description='scripts/checksrc: banned functions and the two-OpenSSL-files rule'
. "${top_srcdir:-$(dirname "$0")/..}/t/lib-test.sh"

test_expect_success 'the source tree passes checksrc' '
	"$top_srcdir/scripts/checksrc" "$top_srcdir" >out 2>err &&
	test_must_be_empty out
'

# A copy of the layout with one offending file proves the check can fail.
make_tree() {
	mkdir -p tree/rules tree/common &&
	printf "int\nf(void)\n{\n\treturn 0;\n}\n" >tree/common/ok.c
}

test_expect_success 'sprintf, strcpy and atoi are refused with file:line' '
	make_tree &&
	printf "void\ng(char *b, const char *s)\n{\n\tsprintf(b, \"%%s\", s);\n\tstrcpy(b, s);\n\t(void)atoi(s);\n}\n" >tree/rules/bad.c &&
	test_expect_code 1 "$top_srcdir/scripts/checksrc" tree >out &&
	test_grep "^rules/bad.c:4:.*banned function" out &&
	test_grep "^rules/bad.c:5:.*banned function" out &&
	test_grep "^rules/bad.c:6:.*banned function" out &&
	test_line_count = 3 out
'

test_expect_success 'snprintf and strtok_r are fine, strtok is not' '
	rm -rf tree && make_tree &&
	printf "void\ng(char *b, char *s, char **p)\n{\n\tsnprintf(b, 4, \"x\");\n\t(void)strtok_r(s, \" \", p);\n}\n" >tree/rules/good.c &&
	"$top_srcdir/scripts/checksrc" tree &&
	printf "void\nh(char *s)\n{\n\t(void)strtok(s, \" \");\n}\n" >tree/rules/tok.c &&
	test_expect_code 1 "$top_srcdir/scripts/checksrc" tree >out &&
	test_grep "^rules/tok.c:4:.*strtok_r" out
'

test_expect_success 'including OpenSSL is refused outside its two files' '
	rm -rf tree && make_tree &&
	printf "#include <openssl/ssl.h>\n" >tree/common/tls.c &&
	test_expect_code 1 "$top_srcdir/scripts/checksrc" tree >out &&
	test_grep "^common/tls.c:1:.*proxy/crypto.c and proxy/tls.c only" out &&
	rm tree/common/tls.c &&
	mkdir -p tree/proxy &&
	printf "#include <openssl/hmac.h>\n" >tree/proxy/crypto.c &&
	printf "#include <openssl/ssl.h>\n" >tree/proxy/tls.c &&
	"$top_srcdir/scripts/checksrc" tree &&
	printf "#include <openssl/ssl.h>\n" >tree/proxy/way-gateway.c &&
	test_expect_code 1 "$top_srcdir/scripts/checksrc" tree >out &&
	test_grep "^proxy/way-gateway.c:1:" out
'

test_expect_success 'trailing white space is refused' '
	rm -rf tree && make_tree &&
	printf "int x; \n" >tree/common/ws.c &&
	test_expect_code 1 "$top_srcdir/scripts/checksrc" tree >out &&
	test_grep "^common/ws.c:1:.*trailing" out
'

test_done
