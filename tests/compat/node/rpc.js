// npm's consul (the Node.js Consul client), unmodified, driven line by line
// by tests/compat/test_node_consul.py: each stdin line is a JSON request,
// each stdout line the answer to one, tagged with its id. Requests run
// concurrently, so a blocking query can wait while others go on.
//
//   {"id": 1, "call": "kv.set", "args": [{"key": "k", "value": "v"}]}
//     -> {"id": 1, "ok": true}
//   {"id": 2, "watch": "kv.get", "options": {"key": "k"}, "changes": 2}
//     -> {"id": 2, "ok": [<first change's data>, <second's>]}
//   a failure -> {"id": N, "error": "<message>", "statusCode": 500}
//
// Usage: node rpc.js HOST PORT
"use strict";

const readline = require("readline");
const Consul = require("consul");

const [host, port] = process.argv.slice(2);
const consul = new Consul({ host, port: Number(port) });

function reply(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

function failure(id, err) {
  const statusCode = err && err.response ? err.response.statusCode : undefined;
  return { id, error: String(err && err.message ? err.message : err), statusCode };
}

function method(path) {
  const [group, name] = path.split(".");
  if (!consul[group] || typeof consul[group][name] !== "function") {
    throw new Error(`no method ${path}`);
  }
  return consul[group][name].bind(consul[group]);
}

async function call(request) {
  const result = await method(request.call)(...(request.args || []));
  return result === undefined ? null : result;
}

// The client's own watch helper (blocking queries with its backoff): the
// data of the first `changes` change events.
function watch(request) {
  return new Promise((resolve, reject) => {
    const seen = [];
    const watcher = consul.watch({
      method: method(request.watch),
      options: request.options,
      backoffFactor: 50,
    });
    watcher.on("change", (data) => {
      seen.push(data === undefined ? null : data);
      if (seen.length >= request.changes) {
        watcher.end();
        resolve(seen);
      }
    });
    watcher.on("error", (err) => {
      watcher.end();
      reject(err);
    });
  });
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let request;
  try {
    request = JSON.parse(line);
  } catch (err) {
    reply({ id: null, error: `bad request line: ${err.message}` });
    return;
  }
  const work = request.watch ? watch(request) : call(request);
  work.then(
    (ok) => reply({ id: request.id, ok }),
    (err) => reply(failure(request.id, err)),
  );
});
// stdin closed: the test is done with us; blocking queries still waiting
// end with the process.
lines.on("close", () => process.exit(0));
