// HTTP server with Node's standard library only; listens on $PORT.
const fs = require("fs");
const http = require("http");
const path = require("path");

const page = path.join(__dirname, "dist", "index.html");
const port = Number(process.env.PORT || 3000);

http.createServer((req, res) => {
  if (req.url === "/health") {
    res.writeHead(200, { "Content-Type": "application/json" });
    return res.end(JSON.stringify({ status: "ok" }));
  }
  const body = fs.existsSync(page) ? fs.readFileSync(page) : "<h1>Hello from a Node app</h1>\n";
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
  res.end(body);
}).listen(port, "0.0.0.0", () => console.log(`listening on ${port}`));
