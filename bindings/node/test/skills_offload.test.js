'use strict';
// Skills, context offload and the Glob/Grep tools are newer than the rest of the library:
// each test is skipped while the library it runs against lacks the functions (or tools).
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { hasFunction } = require('..');
const { testOnBackends, withWorkspace, scratchDir } = require('./helpers');

/** Skips t unless the library has every C function in names; true when skipped. */
async function skipWithout(t, ...names) {
  for (const name of names) {
    if (!(await hasFunction(name))) {
      t.skip(`this libagentsbx has no ${name}`);
      return true;
    }
  }
  return false;
}

/** A host directory holding a skill named name. */
function skillDir(name, description = 'Says hello in a test.') {
  const dir = path.join(scratchDir(), name);
  fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'),
    `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\nRun scripts/hello.sh.\n`);
  fs.writeFileSync(path.join(dir, 'scripts', 'hello.sh'), 'echo hello from the skill\n');
  return dir;
}

testOnBackends(test, 'skills: add, list, use, remove', async (t, backend) => {
  if (await skipWithout(t, 'sbx_skill_add', 'sbx_skills_json', 'sbx_skill_remove')) return;
  await withWorkspace(backend, async (ws) => {
    assert.deepEqual(await ws.skills(), []);
    assert.equal(await ws.addSkill(skillDir('greeter')), 'greeter');
    const skills = await ws.skills();
    assert.equal(skills.length, 1);
    assert.equal(skills[0].name, 'greeter');
    assert.equal(skills[0].description, 'Says hello in a test.');
    assert.equal(skills[0].trusted, true);
    assert.match(skills[0].dir, /^skills\//);
    assert.ok((await ws.tools()).some((tool) => tool.name === 'Skill'));
    assert.match(await ws.instructions(), /greeter/);
    const run = await ws.exec(['sh', `${skills[0].dir}/scripts/hello.sh`]);
    assert.equal(run.stdout.toString(), 'hello from the skill\n');

    await assert.rejects(ws.addSkill(skillDir('greeter')), { codeName: 'EEXIST' });
    await ws.removeSkill('greeter');
    assert.deepEqual(await ws.skills(), []);
    await assert.rejects(ws.removeSkill('greeter'), { codeName: 'ENOENT' });
  });
});

testOnBackends(test, 'skills: from an archive in memory', async (t, backend) => {
  if (await skipWithout(t, 'sbx_skill_add_archive', 'sbx_skills_json')) return;
  const dir = skillDir('archived');
  const tar = execFileSync('tar', ['-cf', '-', '-C', path.dirname(dir), 'archived']);
  const tgz = execFileSync('tar', ['-czf', '-', '-C', dir, '.']);
  await withWorkspace(backend, async (ws) => {
    assert.equal(await ws.addSkillArchive(tar, 'tar'), 'archived');
    await ws.removeSkill('archived');
    assert.equal(await ws.addSkillArchive(tgz), 'archived');
    assert.deepEqual((await ws.skills()).map((s) => s.name), ['archived']);
    await assert.rejects(ws.addSkillArchive(Buffer.from('not an archive')), (err) =>
      err.code < 0 && typeof err.message === 'string');
  });
});

testOnBackends(test, 'offload: context, tool results and data', async (t, backend) => {
  if (await skipWithout(t, 'sbx_offload_context', 'sbx_offload_tool_result',
    'sbx_offload_data')) return;
  await withWorkspace(backend, async (ws) => {
    const messages = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }];
    const contextPath = await ws.offloadContext('s1', messages);
    assert.equal(contextPath, 'sessions/s1/context.jsonl');
    await ws.offloadContext('s1', { role: 'user', content: 'more' });
    const lines = (await ws.readFile(contextPath)).toString().trim().split('\n');
    assert.deepEqual(lines.map((l) => JSON.parse(l).content), ['hi', 'hello', 'more']);

    const resultPath = await ws.offloadToolResult('s1', 'call_1', 'a long tool result');
    assert.equal(resultPath, 'sessions/s1/tool_result-call_1.txt');
    assert.equal((await ws.readFile(resultPath)).toString(), 'a long tool result');

    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const sha = crypto.createHash('sha256').update(png).digest('hex');
    const url = await ws.offloadData('image/png', png);
    assert.match(url, new RegExp(`^workspace:///data/${sha}\\.png$`));
    assert.deepEqual(await ws.readFile(url.slice('workspace:///'.length)), png);
    assert.equal(await ws.offloadData('image/png', png), url);

    await assert.rejects(ws.offloadToolResult('../escape', 'x', 'y'), { codeName: 'EINVAL' });
  });
});

/** The tool definition, or null when this library lacks the tool (or has only a stand-in). */
async function realTool(ws, name) {
  const tool = (await ws.tools()).find((d) => d.name === name);
  return tool?.input_schema?.properties?.pattern ? tool : null;
}

testOnBackends(test, 'tools: Glob and Grep find files and lines', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    if (!(await realTool(ws, 'Glob')) || !(await realTool(ws, 'Grep'))) {
      t.skip('this libagentsbx has no Glob and Grep tools yet');
      return;
    }
    await ws.writeFile('src/a.sh', 'greet() { echo hi; }\n', { mkdirs: true });
    await ws.writeFile('src/b.txt', 'nothing here\n');
    const glob = await ws.toolCall('Glob', { pattern: '**/*.sh' });
    assert.equal(glob.ok, true, glob.output);
    assert.match(glob.output, /a\.sh/);
    assert.doesNotMatch(glob.output, /b\.txt/);
    const grep = await ws.toolCall('Grep', { pattern: 'greet', output_mode: 'content' });
    assert.equal(grep.ok, true, grep.output);
    assert.match(grep.output, /greet\(\) \{ echo hi; \}/);
    const bad = await ws.toolCall('Grep', { pattern: '(' });
    assert.equal(bad.ok, false);
  });
});
