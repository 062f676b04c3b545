// Build step without dependencies: writes the page the server returns.
const fs = require("fs");
fs.mkdirSync("dist", { recursive: true });
fs.writeFileSync("dist/index.html", `<!doctype html><h1>Hello from a Node app</h1><p>Built ${new Date().toISOString()}</p>\n`);
console.log("built dist/index.html");
