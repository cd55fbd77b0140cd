/* Skills inside the workspace: skills/<dir>/SKILL.md (see skills.c). */
#ifndef SBX_SKILLS_H
#define SBX_SKILLS_H

#include <stddef.h>

#include "internal.h"
#include "util/buf.h"

typedef struct sbx_skill {
	char *name, *description;
	char *dir;                /* "skills/<dir>" */
} sbx_skill;

int sbx_skills_load(sbx_workspace *ws, sbx_skill **out, size_t *n);
void sbx_skills_free(sbx_skill *v, size_t n);
/* Appends the <agent-skills> block, or nothing when there are no skills. */
int sbx_skills_render(sbx_workspace *ws, sbx_buf *out);

#endif
