/*
 * strbuf tests: appends of every kind, detach and release, the sticky
 * length limit, and printf growth past the first allocation.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "strbuf.h"

START_TEST(appends_build_the_text)
{
	struct strbuf sb = STRBUF_INIT;

	ck_assert_str_eq(strbuf_str(&sb), "");
	strbuf_addstr(&sb, "ab");
	strbuf_addch(&sb, 'c');
	strbuf_add(&sb, "dexx", 2);
	strbuf_addchars(&sb, '-', 3);
	strbuf_addf(&sb, "%d/%s", 42, "z");
	ck_assert_str_eq(strbuf_str(&sb), "abcde---42/z");
	ck_assert_uint_eq(sb.len, 12);
	strbuf_reset(&sb);
	ck_assert_str_eq(strbuf_str(&sb), "");
	strbuf_addf(&sb, "%s", "again");
	ck_assert_str_eq(strbuf_str(&sb), "again");
	strbuf_release(&sb);
	ck_assert_ptr_null(sb.buf);
	ck_assert_uint_eq(sb.len, 0);
}
END_TEST

START_TEST(addf_grows_past_the_room)
{
	struct strbuf sb = STRBUF_INIT;
	char big[1000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	strbuf_addstr(&sb, "<");
	strbuf_addf(&sb, "%s|%s", big, big);
	strbuf_addch(&sb, '>');
	ck_assert_uint_eq(sb.len, 1 + 999 + 1 + 999 + 1);
	ck_assert_int_eq(sb.buf[0], '<');
	ck_assert_int_eq(sb.buf[1000], '|');
	ck_assert_int_eq(sb.buf[sb.len - 1], '>');
	ck_assert_int_eq(sb.buf[sb.len], '\0');
	strbuf_release(&sb);
}
END_TEST

START_TEST(detach_hands_the_text_over)
{
	struct strbuf sb = STRBUF_INIT;
	char *s = strbuf_detach(&sb);

	ck_assert_str_eq(s, ""); /* never NULL for a good, empty buffer */
	free(s);
	strbuf_addstr(&sb, "kept");
	s = strbuf_detach(&sb);
	ck_assert_str_eq(s, "kept");
	ck_assert_ptr_null(sb.buf);
	free(s);
}
END_TEST

START_TEST(limit_is_sticky)
{
	struct strbuf sb = STRBUF_INIT_MAX(8);

	strbuf_addstr(&sb, "12345678");
	ck_assert_int_eq(sb.bad, STRBUF_OK);
	strbuf_addch(&sb, '9');
	ck_assert_int_eq(sb.bad, STRBUF_TOOLONG);
	ck_assert_ptr_null(strbuf_str(&sb));
	strbuf_reset(&sb);
	strbuf_addch(&sb, 'a'); /* still refused: errors are sticky */
	ck_assert_ptr_null(strbuf_str(&sb));
	ck_assert_ptr_null(strbuf_detach(&sb));
	ck_assert_int_eq(sb.bad, STRBUF_OK);
	ck_assert_uint_eq(sb.max, 8);
	strbuf_addf(&sb, "%s", "123456789");
	ck_assert_int_eq(sb.bad, STRBUF_TOOLONG);
	strbuf_release(&sb);
	strbuf_addchars(&sb, 'x', 9);
	ck_assert_int_eq(sb.bad, STRBUF_TOOLONG);
	strbuf_release(&sb);
}
END_TEST

START_TEST(limit_holds_inside_the_room)
{
	struct strbuf sb = STRBUF_INIT_MAX(70);

	strbuf_addchars(&sb, 'a', 60); /* allocates 64 or more */
	strbuf_reset(&sb);
	strbuf_addf(&sb, "%s", "0123456789");
	ck_assert_int_eq(sb.bad, STRBUF_OK);
	strbuf_reset(&sb);
	strbuf_addchars(&sb, 'b', 65);
	strbuf_addf(&sb, "%s", "123456"); /* fits the room, passes max */
	ck_assert_int_eq(sb.bad, STRBUF_TOOLONG);
	ck_assert_uint_eq(sb.len, 65);
	ck_assert_int_eq(sb.buf[65], '\0');
	strbuf_release(&sb);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "appends", appends_build_the_text },
		{ "addf_grows", addf_grows_past_the_room },
		{ "detach", detach_hands_the_text_over },
		{ "limit", limit_is_sticky },
		{ "limit_in_room", limit_holds_inside_the_room },
	};

	return RUN_CASES("strbuf", cases, 0);
}
