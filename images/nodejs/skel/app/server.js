// Default app of a podhost Node.js pod: replace ~/app with your own.
const http = require("http");
const port = Number(process.env.PORT) || 3000;
http
  .createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>podhost: Node.js pod</title><h1>podhost</h1>
<p>Your Node.js pod is running on Node ${process.version}.</p>\n`);
  })
  .listen(port, "0.0.0.0", () => console.log(`listening on :${port}`));
