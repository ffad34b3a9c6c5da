#!/usr/bin/env node
// The package's command: runs the compiled CLI (built by `npm run build`, which `npm ci` runs through `prepare`).
import "../dist/src/cli/main.js"
