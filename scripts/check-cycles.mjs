#!/usr/bin/env node
// Fails when src/ has a circular import (STYLE.md: a circular import is a design bug).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', 'src');
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (path.endsWith('.ts')) files.push(path);
  }
})(root);

const IMPORT = /^\s*(?:import|export)\s+(?:type\s+)?[^'"]*?from\s+'(\.[^']+)'/gm;
const graph = new Map();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const deps = [];
  for (const m of text.matchAll(IMPORT)) {
    // type-only imports vanish at run time but still shape the architecture: count them too
    deps.push(resolve(dirname(file), m[1].replace(/\.js$/, '.ts')));
  }
  graph.set(file, deps);
}

const state = new Map(); // 1 visiting, 2 done
const cycles = [];
function visit(file, stack) {
  state.set(file, 1);
  stack.push(file);
  for (const dep of graph.get(file) ?? []) {
    if (state.get(dep) === 1) cycles.push([...stack.slice(stack.indexOf(dep)), dep].map((f) => relative(root, f)));
    else if (!state.has(dep) && graph.has(dep)) visit(dep, stack);
  }
  stack.pop();
  state.set(file, 2);
}
for (const file of files) if (!state.has(file)) visit(file, []);

if (cycles.length) {
  for (const c of cycles) console.error(`circular import: ${c.join(' → ')}`);
  process.exit(1);
}
console.log(`no circular imports in ${files.length} files`);
