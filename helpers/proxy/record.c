/* Writing connection records (record.h). Host names and reasons come from untrusted
 * clients: they are JSON-escaped, and what is cut to size is cut before escaping. */
#include <string.h>

#include "proxy.h"
#include "record.h"
#include "util/auditlog.h"
#include "util/buf.h"

static void member(sbx_buf *b, const char *key, const char *value)
{
	if (!value)
		return;
	sbx_buf_printf(b, ",\"%s\":", key);
	sbx_buf_json_string(b, value, strnlen(value, 1024));
}

void sbx_record(struct sbx_proxy *px, const struct sbx_record_info *ri)
{
	char now[40];
	sbx_buf b = { 0 };

	if (px->state_dir_fd < 0)
		return;
	sbx_auditlog_time(now, sizeof now);
	sbx_buf_printf(&b, "{\"time\":\"%s\",\"workspace\":", now);
	sbx_buf_json_string(&b, px->workspace, strlen(px->workspace));
	sbx_buf_puts(&b, ",\"kind\":\"network\"");
	member(&b, "decision", ri->decision);
	member(&b, "rule", ri->rule);
	member(&b, "reason", ri->reason);
	member(&b, "protocol", ri->protocol);
	member(&b, "method", ri->method);
	member(&b, "host", ri->host);
	if (ri->port)
		sbx_buf_printf(&b, ",\"port\":%u", ri->port);
	member(&b, "address", ri->address);
	member(&b, "error", ri->error);
	sbx_buf_printf(&b, ",\"bytes_up\":%llu,\"bytes_down\":%llu,\"duration_ms\":%lld}\n",
	               (unsigned long long)ri->bytes_up, (unsigned long long)ri->bytes_down,
	               (long long)ri->duration_ms);
	if (!b.oom)
		sbx_auditlog_append(px->state_dir_fd, b.data, b.len, px->audit_max_bytes,
		                    px->audit_keep);
	sbx_buf_free(&b);
}
