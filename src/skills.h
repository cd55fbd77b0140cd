/* Skills inside the core: reading them for the system prompt and the Skill tool, and the
 * pieces skills.c and skill_import.c share.
 *
 * Layout: skills/<dir>/SKILL.md in the workspace, flat (no per-agent partitions). <dir> comes
 * from the skill's name: [A-Za-z0-9_-] kept, every other character "_", then "_1", "_2"...
 * when taken. A directory whose SKILL.md is missing or invalid is not a skill and is skipped;
 * so are names starting with '.' (staging areas). Two directories naming the same skill: the
 * one whose dir sorts first counts. Everything goes through the public file API, so it works
 * on every backend. */
#ifndef SBX_SKILLS_H
#define SBX_SKILLS_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"
#include "util/buf.h"
#include "util/frontmatter.h"

#define SBX_SKILLS_DIR "skills"

typedef struct sbx_skill {
	char *name;
	char *description;
	char *dir;          /* "skills/<dir>", workspace-relative */
} sbx_skill;

/* The workspace's skills sorted by name (*n may be 0, then *out is NULL). A missing skills/
 * folder is no skills, not an error. */
int sbx_skills_load(sbx_workspace *ws, sbx_skill **out, size_t *n);
void sbx_skills_free(sbx_skill *v, size_t n);

/* Appends the <agent-skills> block that tells a model which skills there are (name,
 * description and dir as commands see it, with &, < and > escaped), without a final newline;
 * appends nothing when there are none. */
int sbx_skills_render(sbx_workspace *ws, sbx_buf *out);

/* Reads and parses skills/<dir>/SKILL.md (dir as in sbx_skill.dir). *text holds the file (the
 * body points into it); free it after md. */
int sbx_skill_read_md(sbx_workspace *ws, const char *dir, char **text, sbx_skill_md *md);

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
