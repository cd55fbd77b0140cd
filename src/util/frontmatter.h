/* YAML front matter, as SKILL.md files carry it: a "---" line, top-level "key: value" lines,
 * a closing "---" line, and the markdown body after it.
 *
 * Only the YAML that skills use is understood: plain scalars (also continued on indented
 * lines), single- and double-quoted scalars (with escapes, also over several lines), "|" and
 * ">" block scalars (with chomping and indentation indicators), and comments. Nested mappings,
 * sequences and flow collections ("[a, b]") are recognised and skipped: such a key is recorded
 * without a value. Plain scalars are taken literally up to a " #" comment, so
 * "description: Use when: x" is the string "Use when: x" (strict YAML would refuse it).
 *
 * The parser never recurses and refuses text over SBX_FRONTMATTER_MAX bytes or with more than
 * SBX_FRONTMATTER_KEYS_MAX keys, NUL bytes and text that is not UTF-8, naming the key (or the
 * body) where it found it. */
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
