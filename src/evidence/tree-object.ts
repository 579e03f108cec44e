import { objectId, writeLooseObject } from './commit-object.js';

/** An entry as a tree holds it: its path (its bytes as a latin1 string), its mode, its object id (hex). */
export interface TreeEntry {
  path: string;
  mode: number;
  id: string;
}

/** The modes an index entry or tree entry may have, as git writes them in a tree. */
export const TREE_MODES: ReadonlyMap<number, string> = new Map([
  [0o100644, '100644'],
  [0o100755, '100755'],
  [0o120000, '120000'],
  [0o160000, '160000'],
]);

/** A folder of the tree being built: its files, and its subfolders by name. */
interface Folder {
  files: { name: string; mode: string; id: string }[];
  folders: Map<string, Folder>;
}

/** A tree as last built here: its entries and each folder's tree id ('' the root), by path (latin1). */
interface Layout {
  entries: Map<string, { mode: number; id: string }>;
  folders: Map<string, string>;
}

/** Layouts of the trees changed trees are built from (a job's base), by root id; the oldest forgotten first. */
const layouts = new Map<string, Layout>();
const MAX_LAYOUTS = 2;
/** Above this many entries a layout is not kept (its memory, ~30 MB at 100,000, would outweigh the hashing it spares). */
const MAX_LAYOUT_ENTRIES = 100_000;

/**
 * Writes the trees `git write-tree` writes for these entries (each folder's object, as a loose one
 * where neither `objectsDir` nor `alsoIn` holds it) and returns the root's id; null when a mode is
 * not a tree's, a path is both a file and a folder, or a write fails. With `base` (a root id whose
 * layout was remembered), only the folders holding a changed, added or removed entry are hashed
 * again: the others are the base's, already in the repository. `remember` keeps this tree's layout
 * to build from. `hashOnly`: nothing is written, the ids are computed (a tree the repository is
 * known to hold, whose layout is wanted).
 */
export function writeTrees(
  objectsDir: string,
  entries: Iterable<TreeEntry>,
  alsoIn: readonly string[] = [],
  opts: { base?: string; remember?: boolean; hashOnly?: boolean } = {},
): string | null {
  const base = opts.base === undefined ? undefined : layouts.get(opts.base);
  const root: Folder = { files: [], folders: new Map() };
  const dirty = new Set<string>();
  const kept = opts.remember === true ? ({ entries: new Map(), folders: new Map() } as Layout) : null;
  let same = 0;
  let count = 0;
  for (const entry of entries) {
    const mode = TREE_MODES.get(entry.mode);
    if (mode === undefined) return null;
    count++;
    kept?.entries.set(entry.path, { mode: entry.mode, id: entry.id });
    if (base !== undefined) {
      const was = base.entries.get(entry.path);
      if (was !== undefined && was.mode === entry.mode && was.id === entry.id) same++;
      else markFolders(entry.path, dirty);
    }
    const parts = entry.path.split('/');
    let folder = root;
    for (const part of parts.slice(0, -1)) {
      let next = folder.folders.get(part);
      if (next === undefined) folder.folders.set(part, (next = { files: [], folders: new Map() }));
      folder = next;
    }
    folder.files.push({ name: parts.at(-1) as string, mode, id: entry.id });
  }
  if (base !== undefined && same < base.entries.size) {
    // entries the base held and these do not: their folders changed too
    const present = new Set<string>();
    collectPaths(root, '', present);
    for (const p of base.entries.keys()) if (!present.has(p)) markFolders(p, dirty);
  }
  const write = (folder: Folder, at: string): string | null => {
    const unchanged = base !== undefined && !dirty.has(at) ? base.folders.get(at) : undefined;
    if (unchanged !== undefined) {
      kept?.folders.set(at, unchanged);
      return unchanged;
    }
    // names are latin1 strings (one char per byte): string order is git's byte order
    const items: { key: string; name: string; mode: string; id: string }[] = folder.files.map((f) => ({
      ...f,
      key: f.name,
    }));
    const fileNames = folder.folders.size > 0 ? new Set(folder.files.map((f) => f.name)) : null;
    for (const [name, sub] of folder.folders) {
      // a path both a file and a folder: no index git writes holds that
      if (fileNames?.has(name) === true) return null;
      const id = write(sub, at === '' ? name : `${at}/${name}`);
      if (id === null) return null;
      // git orders a folder as if its name ended in '/'
      items.push({ key: `${name}/`, name, mode: '40000', id });
    }
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const body = Buffer.allocUnsafe(items.reduce((n, item) => n + item.mode.length + item.name.length + 22, 0));
    let offset = 0;
    for (const item of items) {
      offset += body.write(`${item.mode} ${item.name}\0`, offset, 'latin1');
      offset += body.write(item.id, offset, 'hex');
    }
    const id = opts.hashOnly === true ? objectId('tree', body) : writeLooseObject(objectsDir, 'tree', body, alsoIn);
    if (id !== null) kept?.folders.set(at, id);
    return id;
  };
  const id = write(root, '');
  if (id !== null && kept !== null && count <= MAX_LAYOUT_ENTRIES) {
    layouts.delete(id);
    layouts.set(id, kept);
    if (layouts.size > MAX_LAYOUTS) layouts.delete(layouts.keys().next().value as string);
  }
  return id;
}

/** Whether a tree's layout is remembered (it can be a `base`). */
export function hasLayout(tree: string): boolean {
  return layouts.has(tree);
}

/** Marks the folders holding a path (the root '' included) as changed. */
function markFolders(p: string, dirty: Set<string>): void {
  for (let i = p.lastIndexOf('/'); i > 0; i = p.lastIndexOf('/', i - 1)) {
    const folder = p.slice(0, i);
    if (dirty.has(folder)) return;
    dirty.add(folder);
  }
  dirty.add('');
}

function collectPaths(folder: Folder, at: string, into: Set<string>): void {
  for (const f of folder.files) into.add(at === '' ? f.name : `${at}/${f.name}`);
  for (const [name, sub] of folder.folders) collectPaths(sub, at === '' ? name : `${at}/${name}`, into);
}
