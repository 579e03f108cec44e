// Fetches the corpus's real projects once into a cache (bench/.cache/verdict-corpus, gitignored)
// and installs what their tests need there; later runs work offline. A project is
// `<cache>/<id>/src` (the package as published: an npm tarball, or the files of a Debian package)
// and, for node projects, `<cache>/<id>/deps/node_modules` (the test dependencies, pinned).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const run = (cmd, args, cwd) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });

/**
 * The project's cached source and dependency folders, fetched and installed on first use.
 * Throws with the failing step when the package cannot be had here (no registry, no apt lists).
 */
export function prepareProject(project, cacheRoot) {
  const root = join(cacheRoot, project.id);
  const src = join(root, 'src');
  const stamp = join(root, '.ready');
  const deps = project.install ? join(root, 'deps', 'node_modules') : null;
  if (existsSync(stamp)) return { src, deps, fetched: false };
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, 'download'), { recursive: true });
  const download = join(root, 'download');
  if (project.source.npm) {
    run('npm', ['pack', project.source.npm, '--pack-destination', download, '--silent'], download);
    const tgz = readdirSync(download).find((f) => f.endsWith('.tgz'));
    if (!tgz) throw new Error(`npm pack ${project.source.npm} left no tarball`);
    mkdirSync(join(root, 'unpacked'));
    run('tar', ['xzf', join(download, tgz), '-C', join(root, 'unpacked')]);
    cpSync(join(root, 'unpacked', 'package'), src, { recursive: true });
  } else if (project.source.deb) {
    const { deb, version, from, take } = project.source;
    run('apt-get', ['download', `${deb}=${version}`], download);
    const file = readdirSync(download).find((f) => f.endsWith('.deb'));
    if (!file) throw new Error(`apt-get download ${deb}=${version} left no .deb`);
    run('dpkg-deb', ['-x', join(download, file), join(root, 'unpacked')]);
    mkdirSync(src);
    // '.' takes the folder's content itself (a Go module's root), a name takes that folder or file
    for (const path of take)
      cpSync(join(root, 'unpacked', from, path), path === '.' ? src : join(src, path.split('/').pop()), {
        recursive: true,
      });
  } else {
    throw new Error(`${project.id}: no source`);
  }
  if (project.install) {
    mkdirSync(join(root, 'deps'));
    writeFileSync(
      join(root, 'deps', 'package.json'),
      `${JSON.stringify({ name: `corpus-${project.id}-deps`, private: true, dependencies: project.install }, null, 2)}\n`,
    );
    // a project from before npm 7 resolved peer dependencies loosely: install it as its own npm did
    const peers = project.legacyPeerDeps ? ['--legacy-peer-deps'] : [];
    run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', ...peers],
      join(root, 'deps'),
    );
  }
  rmSync(join(root, 'unpacked'), { recursive: true, force: true });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
  return { src, deps, fetched: true };
}
