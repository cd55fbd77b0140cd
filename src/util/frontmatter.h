/* YAML front matter, as SKILL.md files carry it: a "---" line, a YAML mapping, a closing
 * "---" (or "...") line, and the markdown body after it.
 *
 * The mapping is read by libyaml. Top-level keys are kept with their scalar values as
 * written (no tag resolution: "null" is the string "null"); a key whose value is a mapping or
 * sequence is recorded without a value. One leniency over strict YAML: a plain value holding
 * ": " is read as one string, so "description: Use when: x" is "Use when: x". Aliases are
 * refused, tags and anchors ignored.
 *
 * Refused: text over SBX_FRONTMATTER_MAX bytes, more than SBX_FRONTMATTER_KEYS_MAX keys,
 * nesting deeper than 1000 levels, NUL bytes and text that is not UTF-8; messages name the
 * line and the key (or the body) where the problem is. */
#ifndef SBX_UTIL_FRONTMATTER_H
#define SBX_UTIL_FRONTMATTER_H

#include <stdbool.h>
#include <stddef.h>

#define SBX_FRONTMATTER_MAX ((size_t)1 << 20)
/* Keys are looked up one by one: a cap keeps hostile front matter from costing n^2. */
#define SBX_FRONTMATTER_KEYS_MAX 1000

typedef struct sbx_fm_field {
	char *key;
	char *value;        /* the decoded scalar; NULL when the value is a mapping, sequence or
	                       flow collection */
	unsigned line;      /* where the key is, 1-based */
} sbx_fm_field;

typedef struct sbx_frontmatter {
	sbx_fm_field *fields;
	size_t n;
	size_t body_offset; /* the body is text[body_offset..len) */
} sbx_frontmatter;

/* Parses text[0..len). `what` names the text in messages ("SKILL.md"). A key given twice is
 * refused. On failure *out is left empty; messages read "<what>: line 3: key 'name': ...". */
int sbx_frontmatter_parse(const char *text, size_t len, const char *what,
                          sbx_frontmatter *out);
const sbx_fm_field *sbx_frontmatter_get(const sbx_frontmatter *fm, const char *key);
void sbx_frontmatter_free(sbx_frontmatter *fm);

/* ---- SKILL.md -------------------------------------------------------------------------- */

/* A skill name: 1..64 characters (code points), no '/', no control characters (C0, DEL, C1,
 * U+2028, U+2029), no whitespace at either end. */
#define SBX_SKILL_NAME_MAX 64

typedef struct sbx_skill_md {
	char *name;
	char *description;  /* non-empty; may hold newlines and tabs, no other control characters */
	const char *body;   /* points into the parsed text */
	size_t body_len;
} sbx_skill_md;

/* Parses a SKILL.md: front matter with string values for "name" (see above) and
 * "description" (other keys are ignored), and a UTF-8 body. -SBX_EFBIG over
 * SBX_FRONTMATTER_MAX bytes, -SBX_EINVAL otherwise, with a message starting "SKILL.md: ". */
int sbx_skill_md_parse(const char *text, size_t len, sbx_skill_md *out);
void sbx_skill_md_free(sbx_skill_md *md);

/* Whether name follows the rules above; *why (may be NULL) says which one it breaks. */
bool sbx_skill_name_valid(const char *name, const char **why);

#endif
