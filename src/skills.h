/* Skills inside the core: reading them for the system prompt and the Skill tool, and the
 * pieces skills.c and skill_import.c share.
 *
 * Layout: skills/<dir>/SKILL.md in the workspace, flat (no per-agent partitions). <dir> comes
 * from the skill's name: [A-Za-z0-9_-] kept, every other character "_", then "_1", "_2"...
 * when taken. A directory whose SKILL.md is missing or invalid is not a skill and is skipped;
 * so are names starting with '.' (staging areas). Two directories naming the same skill: a
 * trusted one counts, else the one whose dir sorts first. Only skills the library added are
 * trusted (skill_trust.c); the others are listed as untrusted and reach neither the prompt nor
 * the Skill tool. Everything goes through the public file API, so it works on every backend. */
#ifndef SBX_SKILLS_H
#define SBX_SKILLS_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"
#include "util/buf.h"
#include "util/frontmatter.h"
#include "util/json.h"

#define SBX_SKILLS_DIR "skills"

typedef struct sbx_skill {
	char *name;
	char *description;
	char *dir;          /* "skills/<dir>", workspace-relative */
	bool trusted;       /* added by sbx_skill_add*, SKILL.md as recorded (skill_trust.c) */
	char sha256[65];    /* of the SKILL.md read */
} sbx_skill;

/* The workspace's skills sorted by name (*n may be 0, then *out is NULL), only the trusted
 * ones when trusted_only. Of two with the same name a trusted one wins, else the first dir.
 * A missing skills/ folder is no skills, not an error. */
int sbx_skills_load(sbx_workspace *ws, bool trusted_only, sbx_skill **out, size_t *n);
void sbx_skills_free(sbx_skill *v, size_t n);

/* Appends the <agent-skills> block that tells a model which skills there are (name,
 * description and dir as commands see it, with &, < and > escaped), without a final newline;
 * appends nothing when there are none. Trusted skills only: nothing a command wrote reaches
 * the system prompt. */
int sbx_skills_render(sbx_workspace *ws, sbx_buf *out);

/* Reads and parses skills/<dir>/SKILL.md (dir as in sbx_skill.dir). *text holds the file, *len
 * bytes (the body points into it); free it after md. */
int sbx_skill_read_md(sbx_workspace *ws, const char *dir, char **text, size_t *len,
                      sbx_skill_md *md);

/* ---- the record of the skills the library added (skill_trust.c) -------------------- */

/* The record (NULL when there is none, it is unusable or its MAC does not hold under this
 * user's key: then nothing is trusted), from the state folder. */
sbx_json *sbx_skill_record_load(sbx_workspace *ws);
/* The record's syntax only (NULL when it is no record): verify it before trusting it. */
sbx_json *sbx_skill_record_parse(const char *text, size_t len);
/* Does the record's MAC hold under key (SBX_HOSTKEY_LEN bytes), every entry well-formed? */
bool sbx_skill_record_verify(const sbx_json *doc, const unsigned char *key);
/* Appends the record old (may be NULL) with dir's entry replaced by (name, sha256), or
 * dropped when name is NULL, and its MAC under key; entries that are not well-formed are
 * left out. */
int sbx_skill_record_render(const sbx_json *old, const char *dir, const char *name,
                            const char *sha256, const unsigned char *key, sbx_buf *b);
/* Does the record say the library added dir with this name and SKILL.md? */
bool sbx_skill_record_trusts(const sbx_json *record, const char *dir, const char *name,
                             const char *sha256);
/* Records dir (replacing its entry) or drops it. Call under sbx_skills_lock(). */
int sbx_skill_record_add(sbx_workspace *ws, const char *dir, const char *name,
                         const char *sha256);
int sbx_skill_record_remove(sbx_workspace *ws, const char *dir);

/* ---- shared by skills.c and skill_import.c ------------------------------------------- */

/* Adding and removing skills take this lock, so two threads of one process never pick the
 * same name or dir. Other processes are kept apart by the atomic rename alone. */
void sbx_skills_lock(void);
void sbx_skills_unlock(void);

/* Does the entry name exist in skills/ (a skill or anything else)? For picking a new dir. */
typedef struct sbx_skills_names {
	char **v;
	size_t n;
} sbx_skills_names;

int sbx_skills_list_names(sbx_workspace *ws, sbx_skills_names *out);
bool sbx_skills_names_has(const sbx_skills_names *names, const char *name);
void sbx_skills_names_free(sbx_skills_names *names);

/* The dir a name maps to before clashes: [A-Za-z0-9_-] kept, each other character '_'. */
char *sbx_skill_dir_base(const char *name);

#endif
