/* Unit tests of the Server-Sent Events reader (src/mcp/sse.c), which MCP's Streamable HTTP
 * transport reads its servers' answers with. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "agentsbx/agentsbx.h"
#include "mcp/sse.h"
#include "util/buf.h"

/* What came out, one "type|data" line per event. */
static int record(void *arg, const char *event, const char *data, size_t len)
{
	sbx_buf *out = arg;

	sbx_buf_printf(out, "%s|", event);
	sbx_buf_append(out, data, len);
	sbx_buf_append(out, "\n", 1);
	return 0;
}

/* Feeds text in pieces of `piece` bytes (0: all at once), then ends the stream. */
static char *events_of(const char *text, size_t len, size_t piece, size_t max, int *r)
{
	sbx_buf out = { 0 };
	sbx_sse s;

	sbx_sse_init(&s, max, record, &out);
	*r = 0;
	for (size_t i = 0; *r == 0 && i < len; i += piece ? piece : len)
		*r = sbx_sse_feed(&s, text + i, piece && len - i > piece ? piece : len - i);
	if (*r == 0)
		*r = sbx_sse_finish(&s);
	sbx_sse_free(&s);
	sbx_buf_append(&out, "", 1);
	return sbx_buf_steal(&out, NULL);
}

static void expect_events(const char *text, const char *want)
{
	/* Whatever the pieces the bytes come in, the same events come out. */
	for (size_t piece = 0; piece <= 5; piece++) {
		int r;
		char *got = events_of(text, strlen(text), piece, 0, &r);

		ck_assert_int_eq(r, 0);
		ck_assert_msg(strcmp(got, want) == 0, "pieces of %zu: got [%s], want [%s]", piece,
		              got, want);
		free(got);
	}
}

START_TEST(events_data_lines_and_types)
{
	expect_events("data: {\"a\":1}\n\n", "message|{\"a\":1}\n");
	/* Several data lines join with LF; one space after the colon is dropped, no more. */
	expect_events("data: a\ndata:b\ndata:  c\n\n", "message|a\nb\n c\n");
	expect_events("event: ping\ndata: x\n\nevent:\ndata: y\n\n", "ping|x\nmessage|y\n");
	/* Comments, id, retry, unknown fields, and a field without colon carry nothing. */
	expect_events(": hello\nid: 7\nretry: 100\nfoo: bar\ndata\n\n", "message|\n");
	/* A blank line without data is no event; the type does not carry over. */
	expect_events("event: x\n\ndata: z\n\n", "message|z\n");
}
END_TEST

START_TEST(every_line_end_and_a_byte_order_mark)
{
	expect_events("data: crlf\r\n\r\ndata: cr\r\rdata: lf\n\n",
	              "message|crlf\nmessage|cr\nmessage|lf\n");
	expect_events("\xef\xbb\xbf" "data: bom\n\n", "message|bom\n");
	/* Only at the very start, and only a whole one: else it is part of the field name. */
	expect_events("\xef\xbb" "data: x\n\n", "");
	expect_events("data: \xef\xbb\xbfx\n\n", "message|\xef\xbb\xbfx\n");
}
END_TEST

START_TEST(a_stream_that_just_ends)
{
	/* The last line without its end, the last event without its blank line. */
	expect_events("data: last", "message|last\n");
	expect_events("data: a\n\ndata: b\n", "message|a\nmessage|b\n");
	expect_events("", "");
	expect_events("\xef\xbb", "");
}
END_TEST

START_TEST(nul_bytes_and_long_types)
{
	static const char text[] = "event: mess\0age\ndata: a\0b\n\n";
	char type[100];
	char *got;
	int r;

	got = events_of(text, sizeof text - 1, 0, 0, &r);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(memcmp(got, "|a\0b\n", 5), 0);   /* no type; the data keeps its NUL */
	free(got);
	memset(type, 'm', sizeof type);
	memcpy(type, "event: message", 14);
	snprintf(type + 90, 10, "\ndata:x\n\n");
	got = events_of(type, strlen(type), 0, 0, &r);
	ck_assert_int_eq(r, 0);
	ck_assert_msg(strncmp(got, "message|", 8) != 0, "a long type became 'message': %s", got);
	free(got);
}
END_TEST

START_TEST(limits_bound_lines_and_events)
{
	char big[300];
	char *got;
	int r;

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	memcpy(big, "data:", 5);
	got = events_of(big, strlen(big), 7, 100, &r);   /* a line that never ends */
	ck_assert_int_eq(r, -SBX_EPROTO);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "line of more than 100 bytes"));
	free(got);
	got = events_of("data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n", 51, 0, 30,
	                &r);
	ck_assert_int_eq(r, -SBX_EPROTO);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "event of more than 30 bytes"));
	free(got);
}
END_TEST

static int refuse(void *arg, const char *event, const char *data, size_t len)
{
	(void)event;
	(void)data;
	(void)len;
	++*(int *)arg;
	return -SBX_EPROTO;
}

START_TEST(a_callback_error_stops_the_reader)
{
	int calls = 0;
	sbx_sse s;

	sbx_sse_init(&s, 0, refuse, &calls);
	ck_assert_int_eq(sbx_sse_feed(&s, "data: a\n\ndata: b\n\n", 18), -SBX_EPROTO);
	ck_assert_int_eq(calls, 1);
	sbx_sse_free(&s);
}
END_TEST

static Suite *sse_suite(void)
{
	Suite *s = suite_create("sse");
	TCase *tc = tcase_create("reader");

	tcase_add_test(tc, events_data_lines_and_types);
	tcase_add_test(tc, every_line_end_and_a_byte_order_mark);
	tcase_add_test(tc, a_stream_that_just_ends);
	tcase_add_test(tc, nul_bytes_and_long_types);
	tcase_add_test(tc, limits_bound_lines_and_events);
	tcase_add_test(tc, a_callback_error_stops_the_reader);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(sse_suite());
}
