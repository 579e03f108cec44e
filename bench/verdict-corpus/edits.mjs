#!/usr/bin/env node
// The file edits of the verdict corpus, as data: the harness applies them to set a project up
// (inject a bug, plant a flaky test), and a scripted `shell` worker applies them as its work
// (`node edits.mjs <base64 JSON>` in the workspace). An edit that does not apply is an error, so
// a corpus whose packages changed under it fails loudly instead of measuring something else.
//
// An edit is one of:
//   { file, find, replace, all? }   replace exact text (it must occur once, or set all)
//   { file, find, replace, nth }    replace its nth occurrence (1-based)
//   { file, pattern, replace }      replace every match of a regular expression (multiline; $1 works)
//   { file, append }                append text
//   { file, prepend }               put text before the first line
//   { file, write, mode? }          write a whole file (mode: e.g. 0o755), creating its folder
//   { file, delete: true }          remove a file
//   { file, json: { 'a.b': value } } set keys of a JSON file (dotted paths)
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Applies `edits` under `root`, in order; throws naming the edit that did not apply. */
export function applyEdits(root, edits) {
  for (const edit of edits) {
    const path = join(root, edit.file);
    if (edit.delete) {
      if (!existsSync(path)) throw new Error(`edit: ${edit.file} does not exist, cannot delete it`);
      rmSync(path, { recursive: true });
    } else if (edit.write !== undefined) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, edit.write);
      if (edit.mode !== undefined) chmodSync(path, edit.mode);
    } else if (edit.append !== undefined) {
      writeFileSync(path, readFileSync(path, 'utf8') + edit.append);
    } else if (edit.prepend !== undefined) {
      writeFileSync(path, edit.prepend + readFileSync(path, 'utf8'));
    } else if (edit.json !== undefined) {
      const doc = JSON.parse(readFileSync(path, 'utf8'));
      for (const [key, value] of Object.entries(edit.json)) setPath(doc, key.split('.'), value);
      writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`);
    } else if (edit.pattern !== undefined) {
      const text = readFileSync(path, 'utf8');
      const re = new RegExp(edit.pattern, 'gm');
      if (!re.test(text)) throw new Error(`edit: ${edit.file} has no match for /${edit.pattern}/`);
      writeFileSync(path, text.replace(re, edit.replace));
    } else {
      const text = readFileSync(path, 'utf8');
      const count = text.split(edit.find).length - 1;
      if (count === 0) throw new Error(`edit: ${edit.file} does not contain ${JSON.stringify(edit.find.slice(0, 80))}`);
      if (edit.nth !== undefined) {
        if (count < edit.nth)
          throw new Error(
            `edit: ${edit.file} contains ${JSON.stringify(edit.find.slice(0, 80))} ${count} times, not ${edit.nth}`,
          );
        const parts = text.split(edit.find);
        writeFileSync(
          path,
          `${parts.slice(0, edit.nth).join(edit.find)}${edit.replace}${parts.slice(edit.nth).join(edit.find)}`,
        );
        continue;
      }
      if (count > 1 && !edit.all)
        throw new Error(
          `edit: ${edit.file} contains ${JSON.stringify(edit.find.slice(0, 80))} ${count} times; the edit must name one place`,
        );
      writeFileSync(path, text.split(edit.find).join(edit.replace));
    }
  }
}

/** The edits that undo find/replace edits (a fix is the injected bug reversed). */
export function reverseEdits(edits) {
  return [...edits].reverse().map((e) => ({
    file: e.file,
    find: e.replace,
    replace: e.find,
    ...(e.all ? { all: true } : {}),
    ...(e.nth ? { nth: e.nth } : {}),
  }));
}

/** The shell command a scripted worker runs to apply `edits` in its workspace. */
export function editCommand(edits) {
  const here = fileURLToPath(import.meta.url);
  return `node ${here} ${Buffer.from(JSON.stringify(edits)).toString('base64')}`;
}

function setPath(doc, keys, value) {
  let o = doc;
  for (const k of keys.slice(0, -1)) o = o[k] ??= {};
  const last = keys[keys.length - 1];
  if (value === null) delete o[last];
  else o[last] = value;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const edits = JSON.parse(Buffer.from(process.argv[2] ?? '', 'base64').toString('utf8'));
  applyEdits(process.cwd(), edits);
  console.log(`applied ${edits.length} edit(s): ${[...new Set(edits.map((e) => e.file))].join(', ')}`);
}
