// Fails early, with a clear message, when this Node.js cannot run the pinned
// npm packages: it checks process.versions.node against the "engines.node"
// range of every direct dependency in package.json (playwright-core needs a
// minimum Node.js; Debian 12 ships Node.js 18). Run by scripts/install_deps.sh
// after `npm ci` and by ctest (test browser_node_version, a fixture the
// browser test requires), so a mismatch is reported before any browser starts.
//
//   node tests/browser/check_node_version.mjs   # exit 0: fits; exit 1: names the package and range
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
const node = process.versions.node;
const problems = [];
for (const name of Object.keys(manifest.dependencies || {})) {
  const file = path.join(repo, 'node_modules', name, 'package.json');
  if (!fs.existsSync(file)) {
    problems.push(`${name} is not installed (run scripts/install_deps.sh, which runs npm ci)`);
    continue;
  }
  const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
  const range = pkg.engines && pkg.engines.node;
  if (range && !semver.satisfies(node, range)) {
    problems.push(`${name}@${pkg.version} requires Node.js ${range}`);
  }
}
if (problems.length > 0) {
  console.error(`Node.js ${node} (${process.execPath}) cannot run the pinned npm packages:`);
  for (const p of problems) console.error(`  - ${p}`);
  console.error('Install a Node.js that fits, or pin package versions that support this one ' +
                '(package.json, then npm install to update package-lock.json).');
  process.exit(1);
}
console.log(`node version ok: Node.js ${node} fits every pinned package's engines range`);
